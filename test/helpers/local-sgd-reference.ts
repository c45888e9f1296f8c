import * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../../sdk/data/dataset";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import { epochOrder, globalBatch, replicaSlices, stepsPerEpoch } from "../../sdk/plan/batches";
import { createOptimizer } from "../../sdk/model/optimizers";

type LossFn = (a: tf.Tensor, b: tf.Tensor) => tf.Tensor;

/**
 * Local SGD / DiLoCo simulated in one process, written from the paper (Douillard et al. 2023,
 * Algorithm 1) independently of the worker's code: every replica keeps its own weights and inner
 * optimizer and steps on its own slices (the mean loss of its slice); after every `every` steps of
 * an epoch, at each epoch's end and after the step a fit stopped at, the outer gradient is
 * the replicas' mean change from the last sync's weights (each replica weighted by its mean share
 * of the batches since), which the outer optimizer applies to those weights; every replica then
 * starts from the result. Trains `model` in place.
 */
export function localSgdReference(
  model: tf.LayersModel,
  ds: Dataset,
  o: { epochs: number; batchSize: number; optimizer: OptimizerSpec; outer: OptimizerSpec; every: number; loss: string; seed: number; replicas: number; stopAfter?: number },
): void {
  model.compile({ optimizer: createOptimizer(o.optimizer), loss: o.loss });
  const c = model as unknown as { lossFunctions?: LossFn[]; model?: { lossFunctions: LossFn[] } };
  const loss = (c.lossFunctions ?? c.model!.lossFunctions)[0]!;
  const vars = model.trainableWeights.map((w) => w.read() as tf.Variable);
  const outer = createOptimizer(o.outer);
  const replicas = Array.from({ length: o.replicas }, (_, r) => ({
    vars: vars.map((v, k) => tf.variable(v.clone(), true, `local_sgd_ref_${r}_${k}_${Math.random().toString(36).slice(2)}`)),
    inner: createOptimizer(o.optimizer),
    shares: 0,
    steps: 0,
  }));
  // The last sync's weights, which the model's variables hold between replicas' steps.
  let anchor = vars.map((v) => v.clone());
  const sync = (): void => {
    const delta = vars.map((v, k) => replicas.reduce((a, rep) => tf.add(a, tf.mul(tf.sub(anchor[k]!, rep.vars[k]!), rep.steps > 0 ? rep.shares / rep.steps : 0)), tf.zerosLike(v)));
    vars.forEach((v, k) => v.assign(anchor[k]!));
    outer.applyGradients(vars.map((v, k) => ({ name: v.name, tensor: delta[k]! })));
    anchor = vars.map((v) => v.clone());
    for (const rep of replicas) {
      rep.vars.forEach((rv, k) => rv.assign(vars[k]!));
      rep.shares = 0;
      rep.steps = 0;
    }
  };
  const perEpoch = stepsPerEpoch(ds.size, o.batchSize);
  let step = 0;
  for (let epoch = 0; epoch < o.epochs; epoch++) {
    const order = epochOrder(ds.size, true, o.seed, epoch);
    for (let i = 0; i < perEpoch; i++, step++) {
      const [start, end] = globalBatch(ds.size, o.batchSize, i);
      let from = start;
      replicaSlices(end - start, o.replicas).forEach((n, r) => {
        const rep = replicas[r]!;
        rep.shares += n / (end - start);
        rep.steps++;
        if (n === 0) return;
        const { x, y } = ds.gather(order, from, from + n);
        from += n;
        // The replica's weights into the model's variables, its gradient out to its own.
        vars.forEach((v, k) => v.assign(rep.vars[k]!));
        const { grads } = tf.variableGrads(() => tf.mean(loss(tf.tensor(y.data, [...y.shape]), model.apply(tf.tensor(x.data, [...x.shape])) as tf.Tensor)) as tf.Scalar, vars);
        rep.inner.applyGradients(rep.vars.map((rv, k) => ({ name: rv.name, tensor: grads[vars[k]!.name]! })));
      });
      vars.forEach((v, k) => v.assign(anchor[k]!));
      const stops = o.stopAfter === step;
      if ((i + 1) % o.every === 0 || i === perEpoch - 1 || stops) sync();
      if (stops) return;
    }
  }
}
