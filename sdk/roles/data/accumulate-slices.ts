import { feedRows, feedRowsOf, type Feed } from "../../compute/objective";
import { replicaSlices } from "../../plan/batches";
import { addInPlace, checkedSliceGradient, type SliceExtras, type SliceOutcome } from "../../compute/slice-gradient";
import { type LoadedReplica } from "../../compute/loaded-replica";

/** Each replica's buffer for a chunk's gradient, kept across steps (a gradient can be tens of MB). */
const chunkBuffers = new WeakMap<LoadedReplica, Float32Array>();

function chunkBuffer(r: LoadedReplica, length: number): Float32Array {
  let b = chunkBuffers.get(r);
  if (!b || b.length !== length) chunkBuffers.set(r, (b = new Float32Array(length)));
  return b;
}

/**
 * A replica's slice computed in `k` chunks one after another (fit option accumulate): each
 * chunk's gradient, weighted by its share of the global batch, is added into `grads`, so the sum
 * is the gradient of the whole slice while only a chunk's activations are held at once. The loss
 * and metrics are the chunks' weighted by their samples. BatchNormalization normalizes each chunk
 * with its own statistics (as accumulation does in every framework). A chunk that finds NaN or
 * Infinity, or fails, ends the slice as one step would.
 */
export async function accumulatedSlice(
  r: LoadedReplica,
  k: number,
  x: Feed,
  y: Feed,
  weight: number,
  grads: Float32Array,
  extra: SliceExtras,
): Promise<SliceOutcome> {
  const rows = feedRows(x);
  if (rows === 0) return checkedSliceGradient(r, x, y, weight, grads, extra);
  grads.fill(0);
  const part = chunkBuffer(r, grads.length);
  const metrics: Record<string, number> = {};
  let loss = 0;
  let from = 0;
  for (const n of replicaSlices(rows, k).filter((c) => c > 0)) {
    const share = n / rows;
    const out = await checkedSliceGradient(
      r,
      feedRowsOf(x, from, from + n),
      feedRowsOf(y, from, from + n),
      weight * share,
      part,
      extra,
    );
    if (out.nonFinite || out.failure !== undefined) {
      grads.fill(0);
      return out;
    }
    addInPlace(grads, part);
    loss += share * out.loss;
    for (const [name, v] of Object.entries(out.metrics ?? {})) metrics[name] = (metrics[name] ?? 0) + share * v;
    from += n;
  }
  return { loss, ...(Object.keys(metrics).length > 0 ? { metrics } : {}) };
}
