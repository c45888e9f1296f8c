import * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../../sdk/data/dataset";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import { epochOrder, globalBatch, replicaSlices, stepsPerEpoch } from "../../sdk/plan/batches";
import { createOptimizer } from "../../sdk/model/optimizers";

type LossFn = (a: tf.Tensor, b: tf.Tensor) => tf.Tensor;

/**
 * PowerSGD simulated in one process, written from the paper (Vogels et al. 2019, Algorithm 1 with
 * error feedback) independently of the worker's code: each step every replica's weighted slice
 * gradient plus its error is M_r; P = sum_r M_r Q; P orthonormalized (QR); Q = sum_r M_r^T P;
 * the update applies P Q^T (vectors summed whole); e_r = M_r - P (M_r^T P)^T; Q carries on.
 * Q starts as the worker's does (the same seeded values are passed in). Trains `model` in place.
 */
export function powerSgdReference(model: tf.LayersModel, ds: Dataset, o: { epochs: number; batchSize: number; optimizer: OptimizerSpec; loss: string; seed: number; replicas: number; q0: (variable: number, m: number, r: number) => tf.Tensor2D; rank: number }): void {
  const opt = createOptimizer(o.optimizer);
  model.compile({ optimizer: opt, loss: o.loss });
  const c = model as unknown as { lossFunctions?: LossFn[]; model?: { lossFunctions: LossFn[] } };
  const loss = (c.lossFunctions ?? c.model!.lossFunctions)[0]!;
  const vars = model.trainableWeights.map((w) => w.read() as tf.Variable);
  const asMatrix = (v: tf.Variable) => (v.rank >= 2 ? [v.size / v.shape[v.rank - 1]!, v.shape[v.rank - 1]!] : null) as [number, number] | null;
  let qs = vars.map((v, i) => {
    const nm = asMatrix(v);
    return nm ? o.q0(i, nm[1], Math.min(o.rank, nm[0], nm[1])) : null;
  });
  const errors = Array.from({ length: o.replicas }, () => vars.map((v) => tf.zeros(v.shape)));
  const perEpoch = stepsPerEpoch(ds.size, o.batchSize);
  for (let epoch = 0; epoch < o.epochs; epoch++) {
    const order = epochOrder(ds.size, true, o.seed, epoch);
    for (let i = 0; i < perEpoch; i++) {
      const [start, end] = globalBatch(ds.size, o.batchSize, i);
      let from = start;
      const Ms = replicaSlices(end - start, o.replicas).map((n, r) => {
        const { x, y } = ds.gather(order, from, from + n);
        from += n;
        const { grads } = tf.variableGrads(() => tf.mean(loss(tf.tensor(y.data, [...y.shape]), model.apply(tf.tensor(x.data, [...x.shape])) as tf.Tensor)) as tf.Scalar, vars);
        return vars.map((v, k) => tf.add(tf.mul(grads[v.name]!, n / (end - start)), errors[r]![k]!));
      });
      const update = vars.map((v, k) => {
        const nm = asMatrix(v);
        const sum = (ts: tf.Tensor[]) => ts.reduce((a, t) => tf.add(a, t));
        if (!nm) {
          Ms.forEach((_, r) => errors[r]![k] = tf.zerosLike(v));
          return sum(Ms.map((m) => m[k]!));
        }
        const mats = Ms.map((m) => tf.reshape(m[k]!, nm) as tf.Tensor2D);
        const P = sum(mats.map((M) => tf.matMul(M, qs[k]!))) as tf.Tensor2D;
        const Phat = tf.linalg.qr(P)[0] as tf.Tensor2D;
        const localQ = mats.map((M) => tf.matMul(M, Phat, true, false));
        const Q = sum(localQ) as tf.Tensor2D;
        mats.forEach((M, r) => (errors[r]![k] = tf.reshape(tf.sub(M, tf.matMul(Phat, localQ[r]!, false, true)), v.shape)));
        qs[k] = Q;
        return tf.reshape(tf.matMul(Phat, Q, false, true), v.shape);
      });
      opt.applyGradients(vars.map((v, k) => ({ name: v.name, tensor: update[k]! })));
    }
  }
  qs = [];
}
