import * as tf from "@tensorflow/tfjs";
import { ProtocolError } from "../../errors/errors";
import { rowsOf } from "../../protocol/tensor";
import { tensorOf } from "../../model/model-io";
import type { LoadedReplica } from "../../compute/loaded-replica";
import { labelTensor } from "../../compute/step-health";
import { feedList, feedRows, reportedNames, type Feed } from "../../compute/objective";
import { addBatchSums, evaluateShard } from "./evaluate-shard";
import type { LayerShards } from "./layer-shards";

/**
 * Validation on a ZeRO-3 replica, which holds 1/N of each layer: the model runs layer by layer,
 * each layer's weights all-gathered just before it, as in the training step's forward pass, so
 * the replica never holds more than one layer whole. Gathers are collectives, so every replica
 * runs `rounds` batches (the most any replica's shard of the validation data needs): those past
 * the end of its own shard only take their part in the gathers. Sums as evaluateShard's.
 */
export async function evaluateGathered(
  shards: LayerShards,
  r: LoadedReplica,
  x: Feed,
  y: Feed,
  batchSize: number,
  rounds: number,
): Promise<{ samples: number; lossSum: number; metricSums: Record<string, number> }> {
  const xs = feedList(x)[0]!;
  const ys = feedList(y)[0]!;
  const samples = feedRows(x);
  const names = reportedNames(r.objective);
  const sums = new Float64Array(1 + names.length);
  const layers = r.model.layers.filter((l) => l.getClassName() !== "InputLayer");
  const io = shards.links();
  for (let k = 0; k < rounds; k++) {
    const start = Math.min(samples, k * batchSize);
    const end = Math.min(samples, start + batchSize);
    let act: tf.Tensor | null = end > start ? tensorOf(rowsOf(xs, start, end)) : null;
    for (const layer of layers) {
      await shards.gatherLayer(layer, io);
      if (!act) continue;
      const input = act;
      act = tf.tidy(() => layer.apply(input, { training: false }) as tf.Tensor);
      input.dispose();
    }
    if (!act) continue;
    const target = labelTensor(rowsOf(ys, start, end));
    try {
      await addBatchSums(r.objective, [target], [act], end - start, sums);
    } finally {
      tf.dispose([target, act]);
    }
  }
  return { samples, lossSum: sums[0]!, metricSums: Object.fromEntries(names.map((m, i) => [m, sums[1 + i]!])) };
}

/** A replica's shard of the validation data: the whole model at once, or (ZeRO-3) layer by layer, gathered. */
export function evaluateReplica(
  r: LoadedReplica,
  layers: LayerShards | null,
  x: Feed,
  y: Feed,
  msg: { batchSize: number; rounds?: number | undefined },
): Promise<{ samples: number; lossSum: number; metricSums: Record<string, number> }> {
  if (layers?.stage !== 3) return evaluateShard(r, x, y, msg.batchSize);
  if (msg.rounds === undefined)
    return Promise.reject(
      new ProtocolError(
        '"evaluate" on a ZeRO-3 replica must say how many batches every replica runs (rounds): each gathers the layers together',
      ),
    );
  return evaluateGathered(layers, r, x, y, msg.batchSize, msg.rounds);
}
