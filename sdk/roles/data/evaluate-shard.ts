import * as tf from "@tensorflow/tfjs";
import { rowsOf, type Tensorlike } from "../../protocol/tensor";
import { tensorOf } from "../../model/model-io";
import type { LoadedReplica } from "../slice-gradient";
import { labelTensor, metricScalars } from "../step-health";
import { readConcat } from "../device-io";

/**
 * The model as it now is on a shard of validation data, as model.fit's validation computes it:
 * inference mode (dropout off, BatchNormalization's moving statistics), the compiled loss
 * without regularizers, and the compiled metrics, `batchSize` samples at a time. Returns sums
 * over the shard (each batch's mean times its size), which the driver adds across shards.
 */
export async function evaluateShard(r: LoadedReplica, x: Tensorlike, y: Tensorlike, batchSize: number): Promise<{ samples: number; lossSum: number; metricSums: Record<string, number> }> {
  const samples = x.shape[0] ?? 0;
  const sums = new Float64Array(1 + r.metrics.length);
  for (let start = 0; start < samples; start += batchSize) {
    const end = Math.min(samples, start + batchSize);
    const means = tf.tidy(() => {
      const xs = tensorOf(rowsOf(x, start, end));
      const ys = labelTensor(rowsOf(y, start, end));
      const out = r.model.apply(xs, { training: false }) as tf.Tensor;
      return [tf.mean(r.plainLossFn(ys, out)) as tf.Scalar, ...metricScalars(r.metrics, ys, out)].map((s) => s.reshape([1]));
    });
    // One read per batch: on a GPU worker each read is a round trip.
    const values = await readConcat(means);
    tf.dispose(means);
    values.forEach((v, i) => (sums[i]! += v * (end - start)));
  }
  return { samples, lossSum: sums[0]!, metricSums: Object.fromEntries(r.metrics.map((m, i) => [m.name, sums[1 + i]!])) };
}
