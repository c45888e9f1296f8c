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
 *
 * `membership` (an elastic fit's changes, each at the step training went on from) takes a
 * replica out of the steps from then on, or adds one (right after a sync) with the sync's
 * weights and a copy of the lowest-ranked replica's inner optimizer state; each step's batch is
 * split among the replicas then, in rank order.
 */
export async function localSgdReference(
  model: tf.LayersModel,
  ds: Dataset,
  o: { epochs: number; batchSize: number; optimizer: OptimizerSpec; outer: OptimizerSpec; every: number; loss: string; seed: number; replicas: number; stopAfter?: number; membership?: ReadonlyArray<{ change: "left" | "joined"; rank: number; step: number }> },
): Promise<void> {
  model.compile({ optimizer: createOptimizer(o.optimizer), loss: o.loss });
  const c = model as unknown as { lossFunctions?: LossFn[]; model?: { lossFunctions: LossFn[] } };
  const loss = (c.lossFunctions ?? c.model!.lossFunctions)[0]!;
  const vars = model.trainableWeights.map((w) => w.read() as tf.Variable);
  const outer = createOptimizer(o.outer);
  const replica = (rank: number) => ({
    rank,
    vars: vars.map((v, k) => tf.variable(v.clone(), true, `local_sgd_ref_${rank}_${k}_${Math.random().toString(36).slice(2)}`)),
    inner: createOptimizer(o.optimizer),
    shares: 0,
    steps: 0,
  });
  let replicas = Array.from({ length: o.replicas }, (_, r) => replica(r));
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
      for (const m of o.membership?.filter((x) => x.step === step) ?? []) {
        if (m.change === "left") replicas = replicas.filter((r) => r.rank !== m.rank);
        else replicas = [...replicas, await joined(replica(m.rank), replicas[0]!.inner)].sort((a, b) => a.rank - b.rank);
      }
      const [start, end] = globalBatch(ds.size, o.batchSize, i);
      let from = start;
      replicaSlices(end - start, replicas.length).forEach((n, r) => {
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

/** A joining replica: the inner optimizer's state copied from `from` (Adam's running products too, as the workers carry them). */
async function joined<R extends { inner: tf.Optimizer }>(r: R, from: tf.Optimizer): Promise<R> {
  await r.inner.setWeights((await from.getWeights()).map((w) => ({ name: w.name, tensor: w.tensor.clone() })));
  for (const k of ["accBeta1", "accBeta2"]) {
    const src = (from as unknown as Record<string, tf.Variable | undefined>)[k];
    const dst = (r.inner as unknown as Record<string, tf.Variable | undefined>)[k];
    if (src && dst) dst.assign(src);
  }
  return r;
}
