import * as tf from "@tensorflow/tfjs";
import type { LossName } from "../../sdk/protocol/loss-names";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import type { Dataset } from "../../sdk/data/dataset";
import { epochOrder } from "../../sdk/plan/batches";
import { createOptimizer } from "../../sdk/model/optimizers";

/**
 * The reference every equivalence test compares with: single-process model.fit on the batches a
 * meshtrain fit with the same options sees (each epoch's seeded order, or the dataset's order
 * without shuffling; batches in order within it). Trains `model` in place and returns the loss
 * of every batch.
 */
export async function modelFitReference(
  model: tf.LayersModel,
  ds: Dataset,
  o: { epochs: number; batchSize: number; optimizer: OptimizerSpec; shuffle?: boolean; seed?: number; loss?: LossName },
): Promise<number[]> {
  model.compile({ optimizer: createOptimizer(o.optimizer), loss: o.loss ?? "categoricalCrossentropy" });
  const losses: number[] = [];
  for (let epoch = 0; epoch < o.epochs; epoch++) {
    const { x, y } = ds.gather(epochOrder(ds.size, o.shuffle ?? true, o.seed ?? 0, epoch), 0, ds.size);
    const xs = tf.tensor(x.data, [...x.shape]);
    const ys = tf.tensor(y.data, [...y.shape]);
    await model.fit(xs, ys, {
      batchSize: o.batchSize,
      epochs: 1,
      shuffle: false,
      verbose: 0,
      callbacks: { onBatchEnd: async (_b, logs) => void losses.push(logs!.loss as number) },
    });
    tf.dispose([xs, ys]);
  }
  return losses;
}
