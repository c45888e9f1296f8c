import * as tf from "@tensorflow/tfjs";
import type { LossName } from "../../sdk/protocol/loss-names";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import type { Dataset } from "../../sdk/data/dataset";
import { epochOrder, globalBatch, replicaSlices, stepsPerEpoch } from "../../sdk/plan/batches";
import { createOptimizer } from "../../sdk/model/optimizers";

type LossFn = (a: tf.Tensor, b: tf.Tensor) => tf.Tensor;

/**
 * The one-process reference for models with state beyond trainable weights (BatchNormalization).
 * Every global batch is cut as the driver cuts it: into `replicas` slices, each slice into
 * `microBatches` micro-batches. Each micro-batch's gradient of its mean loss is weighted by its
 * share of the global batch and summed; one optimizer update is applied per step.
 *
 * The state: each replica starts the step from the same statistics and runs its micro-batches
 * one after another (each updating them once, as gradient accumulation in one process does);
 * the step ends with the share-weighted mean of the replicas' statistics (Keras'
 * MirroredStrategy). Data parallelism is replicas = workers, microBatches = 1; a pipeline is
 * replicas = 1; hybrid is both.
 *
 * `replicas` may change per step (elastic runs: the replicas each step ran on).
 * Steps in `skipSteps` are left out (as nonFinite "skip" drops them). `withPenalties`: each
 * step's loss counts the weights' penalties, as model.fit's History does. Written independently of
 * the worker's code. Trains `model` in place; returns each step's loss.
 */
export function slicedReference(
  model: tf.LayersModel,
  ds: Dataset,
  o: { epochs: number; batchSize: number; optimizer: OptimizerSpec; loss: LossName; shuffle?: boolean; seed?: number; replicas: number | ((step: number) => number); microBatches?: number; skipSteps?: readonly number[]; withPenalties?: boolean },
): number[] {
  const opt = createOptimizer(o.optimizer);
  model.compile({ optimizer: opt, loss: o.loss });
  const compiled = model as unknown as { model?: { lossFunctions: LossFn[] }; lossFunctions?: LossFn[] };
  const loss = (compiled.lossFunctions ?? compiled.model!.lossFunctions)[0]!;
  const vars = model.trainableWeights.map((w) => w.read() as tf.Variable);
  const stateVars = model.nonTrainableWeights;
  const losses: number[] = [];
  const perEpoch = stepsPerEpoch(ds.size, o.batchSize);
  for (let epoch = 0; epoch < o.epochs; epoch++) {
    const order = epochOrder(ds.size, o.shuffle ?? true, o.seed ?? 0, epoch);
    for (let i = 0; i < perEpoch; i++) {
      if (o.skipSteps?.includes(epoch * perEpoch + i)) {
        losses.push(NaN);
        continue;
      }
      const [start, end] = globalBatch(ds.size, o.batchSize, i);
      const count = end - start;
      const start0 = stateVars.map((v) => v.read().clone());
      let stateSum: tf.Tensor[] = start0.map((t) => tf.zerosLike(t));
      let gradSum: tf.Tensor[] = vars.map((v) => tf.zerosLike(v));
      let stepLoss = 0;
      let from = start;
      const replicas = typeof o.replicas === "number" ? o.replicas : o.replicas(epoch * perEpoch + i);
      for (const slice of replicaSlices(count, replicas)) {
        stateVars.forEach((v, k) => v.write(start0[k]!));
        for (const n of replicaSlices(slice, o.microBatches ?? 1)) {
          if (n === 0) continue;
          const { x, y } = ds.gather(order, from, from + n);
          from += n;
          const share = n / count;
          const xs = tf.tensor(x.data, [...x.shape]);
          const ys = tf.tensor(Float32Array.from(y.data), [...y.shape]);
          let dataLoss = 0;
          const { value, grads } = tf.variableGrads(() => {
            const out = model.apply(xs, { training: true }) as tf.Tensor;
            let total = tf.mean(loss(ys, out)) as tf.Scalar;
            dataLoss = total.dataSync()[0]!;
            for (const reg of model.calculateLosses()) total = tf.add(total, reg);
            // model.fit's History counts the weights' penalties in the loss.
            if (o.withPenalties) dataLoss = total.dataSync()[0]!;
            return total;
          }, vars);
          stepLoss += share * dataLoss;
          const summed = gradSum.map((g, k) => tf.tidy(() => tf.add(g, tf.mul(grads[vars[k]!.name]!, share))));
          tf.dispose(gradSum);
          gradSum = summed;
          tf.dispose([xs, ys, value, ...Object.values(grads)]);
        }
        const replicaShare = slice / count;
        const summed = stateSum.map((acc, k) => tf.tidy(() => tf.add(acc, tf.mul(tf.sub(stateVars[k]!.read(), start0[k]!), replicaShare))));
        tf.dispose(stateSum);
        stateSum = summed;
      }
      stateVars.forEach((v, k) => tf.tidy(() => void v.write(tf.add(start0[k]!, stateSum[k]!))));
      opt.applyGradients(vars.map((v, k) => ({ name: v.name, tensor: gradSum[k]! })));
      tf.dispose([...start0, ...stateSum, ...gradSum]);
      losses.push(stepLoss);
    }
  }
  return losses;
}
