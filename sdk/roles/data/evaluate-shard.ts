import * as tf from "@tensorflow/tfjs";
import { rowsOf } from "../../protocol/tensor";
import { tensorOf } from "../../model/model-io";
import type { LoadedReplica } from "../../compute/loaded-replica";
import { labelTensor } from "../../compute/step-health";
import { readConcat } from "../../compute/device-io";
import {
  feedList,
  feedRows,
  objectiveLoss,
  outputList,
  reported,
  reportedNames,
  type Feed,
  type Objective,
} from "../../compute/objective";

/**
 * Adds one validation batch to `sums` ([loss | reported...], each the batch's mean times its
 * `rows`): the plain losses, without class weights or regularizers, as model.fit validates. One
 * read per batch: on a GPU worker each read is a round trip.
 */
export async function addBatchSums(
  o: Objective,
  ys: readonly tf.Tensor[],
  outs: readonly tf.Tensor[],
  rows: number,
  sums: Float64Array,
): Promise<void> {
  const means = tf.tidy(() => {
    const loss = objectiveLoss(o, ys, outs, true);
    return [loss.total, ...reported(o, ys, outs, loss.each)].map((s) => s.reshape([1]));
  });
  const values = await readConcat(means);
  tf.dispose(means);
  values.forEach((v, i) => (sums[i]! += v * rows));
}

/**
 * The model as it now is on a shard of validation data, as model.fit's validation computes it:
 * inference mode (dropout off, BatchNormalization's moving statistics), the compiled loss
 * without regularizers or class weights, and the compiled metrics (and, with several outputs,
 * each output's loss), `batchSize` samples at a time. Returns sums over the shard (each batch's
 * mean times its size), which the driver adds across shards.
 */
export async function evaluateShard(
  r: LoadedReplica,
  x: Feed,
  y: Feed,
  batchSize: number,
): Promise<{ samples: number; lossSum: number; metricSums: Record<string, number> }> {
  const samples = feedRows(x);
  const names = reportedNames(r.objective);
  const sums = new Float64Array(1 + names.length);
  for (let start = 0; start < samples; start += batchSize) {
    const end = Math.min(samples, start + batchSize);
    const xs = feedList(x).map((t) => tensorOf(rowsOf(t, start, end)));
    const ys = feedList(y).map((t) => labelTensor(rowsOf(t, start, end)));
    const outs = tf.tidy(() =>
      outputList(r.model.apply(xs.length === 1 ? xs[0]! : xs, { training: false }) as tf.Tensor | tf.Tensor[]),
    );
    try {
      await addBatchSums(r.objective, ys, outs, end - start, sums);
    } finally {
      tf.dispose([...xs, ...ys, ...outs]);
    }
  }
  return { samples, lossSum: sums[0]!, metricSums: Object.fromEntries(names.map((m, i) => [m, sums[1 + i]!])) };
}
