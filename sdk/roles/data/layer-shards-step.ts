import type * as tf from "@tensorflow/tfjs";
import { wallClock } from "../../util/clock";
import type { Tensorlike } from "../../protocol/tensor";
import { replicaSlices } from "../../plan/batches";
import { feedRows, feedRowsOf, type Feed } from "../../compute/objective";
import type { StepOutcome } from "../../backends/native/step/native-step";
import type { HostIO, RoleReply } from "../role";
import type { MessageOf } from "../../protocol/messages";
import { ProtocolError } from "../../errors/errors";
import { nativeMetrics } from "../../compute/slice-gradient";
import { type LoadedReplica } from "../../compute/loaded-replica";
import { inputNonFinite, survivedStepError, type NonFinite } from "../../compute/step-health";
import type { StepResult } from "./step-result";
import type { LayerShards } from "./layer-shards";

/**
 * One data-parallel step of a ZeRO-2 or ZeRO-3 replica: the slice's forward and backward pass,
 * each layer's gradient reduce-scattered (under ZeRO-3 each layer gathered too; see
 * LayerShards), then one small all-reduce of two flags (and the change of the model's state, BatchNormalization's moving statistics, which ends the step at the replicas' weighted mean), so that every replica drops the step
 * alike when a slice could not be learned from (its input or loss not finite, or its
 * computation failed) or a summed gradient went non-finite, and otherwise each updates its
 * shard (ZeRO-2: and gathers the new weights). With `accumulate` k the slice runs in k chunks,
 * each chunk's reduce-scatters adding into the shard's gradient (every replica runs k, empty
 * ones too, so the collectives pair up). A chunk that fails before its first collective still
 * takes its part in all of them, with nothing to add.
 */
export async function layerShardsStep(
  shards: LayerShards,
  r: LoadedReplica,
  weight: number,
  x: Feed,
  y: Feed,
  io: HostIO,
  step: number,
  learningRate?: number,
  accumulate = 1,
): Promise<StepResult> {
  const t0 = performance.now();
  const startedAt = wallClock();
  // BatchNormalization's moving statistics: each replica's forward pass moves its own; the step
  // ends with the replicas' weighted mean (as plain data parallelism), summed with the flags.
  const stateBefore = await r.state.snapshot();
  const passes = await chunks(shards, r, x, y, weight, accumulate, io);
  const t1 = performance.now();
  const { own, failure } = passes;
  const flagged = own !== undefined || failure !== undefined ? 1 : 0;
  const shardBad = shards.nonFinite;
  const summed = new Float32Array(2 + r.state.length);
  summed[0] = flagged;
  summed[1] = shardBad ? 1 : 0;
  if (!flagged && feedRows(x) > 0) r.state.writeChange(stateBefore, weight, summed.subarray(2), r.state.values());
  const flags = await io.allReduce(summed);
  const stats = shards.stats;
  stats.waitMs += flags.stats.waitMs;
  stats.commMs += flags.stats.commMs;
  stats.bytesSent += flags.stats.bytesSent;
  const skipped = flags.data[0]! + flags.data[1]! > 0;
  // A non-finite sum where no slice was flagged went so in the sum: say which variable this replica saw it in.
  const nonFinite =
    own ??
    (flags.data[0] === 0 && shardBad
      ? { where: "gradient" as const, variable: shards.nonFiniteVariable(namesOf(r)) }
      : undefined);
  const t2 = performance.now();
  const talked = stats.commMs + stats.waitMs;
  r.state.set(stateBefore, skipped ? undefined : flags.data.subarray(2));
  if (skipped) shards.dropped();
  else await shards.apply(io, learningRate);
  // ZeRO-2's update ends in all-gathers: their time is communication, not the update's.
  const t3 = performance.now() - (stats.commMs + stats.waitMs - talked);
  if (failure !== undefined) throw survivedStepError(failure, step);
  return {
    loss: passes.loss,
    startedAt,
    computeMs: Math.max(0, t1 - t0 - stats.commMs - stats.waitMs),
    commMs: stats.commMs,
    waitMs: stats.waitMs,
    applyMs: t3 - t2,
    slowdownMs: 0,
    sentBytes: stats.bytesSent,
    ...(passes.metrics ? { metrics: passes.metrics } : {}),
    ...(shards.collectives.length > 0 ? { collectives: shards.collectives } : {}),
    ...(nonFinite ? { nonFinite } : {}),
    ...(skipped ? { skipped } : {}),
  };
}

/**
 * The slice's passes, in `k` chunks: the loss and metrics weighted by each chunk's samples, what
 * this replica found non-finite in its input or loss, and what failed (after which the remaining
 * chunks take part with nothing to add).
 */
async function chunks(
  shards: LayerShards,
  r: LoadedReplica,
  xs: Feed,
  ys: Feed,
  weight: number,
  k: number,
  io: HostIO,
): Promise<{ loss: number; metrics?: Record<string, number>; own?: NonFinite; failure?: unknown }> {
  const rows = feedRows(xs);
  const out: { loss: number; metrics?: Record<string, number>; own?: NonFinite; failure?: unknown } = { loss: 0 };
  let from = 0;
  for (const [c, n] of replicaSlices(rows, k).entries()) {
    const share = rows > 0 ? n / rows : 0;
    const x = feedRowsOf(xs, from, from + n);
    const y = feedRowsOf(ys, from, from + n);
    from += n;
    let pass: StepOutcome | null = null;
    if (out.failure === undefined) {
      try {
        pass = await shards.slice(x, y, weight * share, io, c > 0);
      } catch (err) {
        out.failure = err;
      }
    }
    if (!pass) {
      const empty = shards.emptyBatch();
      await shards.slice(empty.x, empty.y, 0, io, c > 0);
      continue;
    }
    if (n === 0) continue;
    out.own ??= inputNonFinite(...x, ...y) ?? (!Number.isFinite(pass.loss) ? { where: "loss" } : undefined);
    out.loss += share * pass.loss;
    const metrics = r.step.native ? nativeMetrics(r, r.step.native, y, pass.outs, pass.each) : undefined;
    for (const [name, v] of Object.entries(metrics ?? {}))
      (out.metrics ??= {})[name] = (out.metrics[name] ?? 0) + share * v;
  }
  if (out.failure !== undefined) delete out.own;
  return out;
}

function namesOf(r: LoadedReplica): Map<tf.Variable, string> {
  return new Map(r.vars.map((v, i) => [v, r.names[i]!]));
}

/** A ZeRO-3 replica loaded with weights "parts" takes its shard's values ("setShard"), one tensor laid flat over its ranges. */
export async function shardSet(
  shards: LayerShards,
  msg: MessageOf<"setShard">,
  attachments: readonly Tensorlike[],
): Promise<RoleReply> {
  const [values, ...more] = attachments;
  if (!values || more.length > 0 || !(values.data instanceof Float32Array))
    throw new ProtocolError(`"setShard" carries ${attachments.length} tensors; it brings one of float32 values`);
  shards.setShard(values.data, msg.ranges);
  return { draft: { type: "shardSet", re: msg.id } };
}
