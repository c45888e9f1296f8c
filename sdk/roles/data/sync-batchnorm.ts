import * as tf from "@tensorflow/tfjs";
import { labelTensor, inputNonFinite, nonFiniteIn } from "../../compute/step-health";
import { tensorOf } from "../../model/model-io";
import { seedDropout } from "../pipeline/stage-model";
import { readConcat } from "../../compute/device-io";
import {
  feedList,
  feedRows,
  objectiveLoss,
  outputList,
  reported,
  reportedNames,
  type Feed,
} from "../../compute/objective";
import type { SliceOutcome } from "../../compute/slice-gradient";
import type { LoadedReplica } from "../../compute/loaded-replica";
import { patchNorm, type Norm, type Pass } from "./sync-norm-layer";

/** The data ring's all-reduce, as a replica's step has it (float32; its stats unused here). */
type SumUp = (data: Float32Array) => Promise<{ data: Float32Array }>;

/** What a layer's global statistics are owed by the whole batch's loss, per channel. */
interface Owed {
  mean: tf.Tensor;
  variance: tf.Tensor;
}

/** One slice's rounds: its model and targets, its share, and whether it still computes. */
interface Run {
  r: LoadedReplica;
  ys: tf.Tensor[];
  weight: number;
  allReduce: SumUp;
  broken: boolean;
  failure: unknown;
  means: tf.Tensor[];
  variances: tf.Tensor[];
  forward?: () => tf.Tensor[];
}

/**
 * Synchronized batch normalization (strategy("data", { batchNorm: "sync" })): every
 * BatchNormalization layer normalizes with the mean and variance of the whole global batch,
 * as one process training at the global batch does, for slices too small for statistics of
 * their own. A forward pass can wait for no network, so the step is taken in rounds, each an
 * all-reduce of a few numbers per channel:
 *
 * - forward, layer by layer: the local sum (then the sum of squared deviations from the global
 *   mean) of the layer's input, all-reduced into the global mean (then variance);
 * - backward, layer by layer from the last: the gradient of the replica's weighted loss with
 *   respect to the layer's global mean and variance (each treated as an input), plus what later
 *   layers' statistics carry back, all-reduced: what the whole batch's loss owes each statistic;
 * - the gradient of the weights, with each layer's statistics' debts added as linear terms, so
 *   the all-reduced gradient is the global batch's exactly. (The variance's dependence on the
 *   mean sums to zero over the batch and is left out.)
 *
 * Every replica takes part in every all-reduce, with zeros when its slice is empty, holds NaN or
 * Infinity, or its computation threw, so no peer waits; the flag then drops the step everywhere.
 */
export class SyncNorm {
  private readonly norms: Norm[];
  private pass: Pass | null = null;

  constructor(model: tf.LayersModel) {
    this.norms = model.layers
      .filter((l) => l.getClassName() === "BatchNormalization")
      .map((l, k) => patchNorm(l, k, () => this.pass));
  }

  /** Whether the model has any layer to synchronize. */
  get layers(): number {
    return this.norms.length;
  }

  /** One step's slice, as checkedSliceGradient computes it, with the whole batch's statistics. */
  async slice(
    r: LoadedReplica,
    x: Feed,
    y: Feed,
    weight: number,
    flat: Float32Array,
    stateNow: Float32Array | undefined,
    allReduce: SumUp,
    step: number,
  ): Promise<SliceOutcome> {
    const input = inputNonFinite(...feedList(x), ...feedList(y));
    const xs = feedList(x).map(tensorOf);
    const ys = feedList(y).map(labelTensor);
    // An empty, non-finite or failed slice still takes part in every round, with zeros.
    const run: Run = {
      r,
      ys,
      weight,
      allReduce,
      broken: input !== undefined || feedRows(x) === 0,
      failure: undefined,
      means: [],
      variances: [],
    };
    run.forward = () => {
      seedDropout(r.model, step, 0);
      return outputList(r.model.apply(xs.length === 1 ? xs[0]! : xs, { training: true }) as tf.Tensor | tf.Tensor[]);
    };
    let owed: Owed[] = [];
    try {
      await this.statistics(run);
      owed = await this.debts(run);
      if (run.broken) {
        flat.fill(0);
        return run.failure !== undefined
          ? { loss: NaN, failure: run.failure }
          : input
            ? { loss: NaN, nonFinite: input }
            : { loss: 0 };
      }
      const out = this.weightGradient(run, owed, flat);
      this.moveAverages(run.means, run.variances);
      if (stateNow) await readConcat(r.state.tensors(), stateNow);
      const found = nonFiniteIn(out.loss, flat, r.names, r.sizes);
      if (found) flat.fill(0);
      return { ...out, ...(found ? { nonFinite: found } : {}) };
    } finally {
      tf.dispose([...xs, ...ys, ...run.means, ...run.variances, ...owed.flatMap((o) => [o.mean, o.variance])]);
    }
  }

  /** The replica's part of a round, summed over every replica (its zeros once it is broken). */
  private async sumUp(run: Run, local: () => Float32Array, length: number): Promise<Float32Array> {
    let data: Float32Array = new Float32Array(length);
    if (!run.broken) {
      try {
        data = local();
      } catch (err) {
        run.failure = err;
        run.broken = true;
        data = new Float32Array(length);
      }
    }
    return (await run.allReduce(data)).data;
  }

  /** Forward rounds, layer by layer: the global mean (sums and counts), then the variance (squared deviations from it). */
  private async statistics(run: Run): Promise<void> {
    for (let l = 0; l < this.norms.length; l++) {
      const C = this.norms[l]!.channels;
      const s = await this.sumUp(
        run,
        () => this.within(run, (p) => (run.forward!(), Float32Array.from([...p.sum[l]!.dataSync(), p.count[l]!]))),
        C + 1,
      );
      const n = Math.max(1, s[C]!);
      run.means.push(tf.tensor1d(s.subarray(0, C).map((v) => v / n)));
      const q = await this.sumUp(
        run,
        () => this.within(run, (p) => (run.forward!(), Float32Array.from(p.squares[l]!.dataSync()))),
        C,
      );
      run.variances.push(tf.tensor1d(q.map((v) => v / n)));
      this.counts[l] = n;
    }
  }

  /** Backward rounds, from the last layer: what the global batch's loss owes each layer's mean and variance. */
  private async debts(run: Run): Promise<Owed[]> {
    const K = this.norms.length;
    const owed: Array<Owed | null> = Array.from({ length: K }, () => null);
    for (let l = K - 1; l >= 0; l--) {
      const C = this.norms[l]!.channels;
      const g = await this.sumUp(
        run,
        () => {
          const { grads } = tf
            .engine()
            .gradients(
              () => this.within(run, (p) => this.objective(run, run.forward!(), p, owed, l + 1).total),
              [run.means[l]!, run.variances[l]!],
            );
          const out = Float32Array.from([...grads[0]!.dataSync(), ...grads[1]!.dataSync()]);
          tf.dispose(grads);
          return out;
        },
        2 * C,
      );
      owed[l] = { mean: tf.tensor1d(g.subarray(0, C)), variance: tf.tensor1d(g.subarray(C)) };
    }
    return owed as Owed[];
  }

  /** The weights' gradient with every statistic's debt added, into `flat`; the slice's loss and metrics. */
  private weightGradient(
    run: Run,
    owed: readonly Owed[],
    flat: Float32Array,
  ): { loss: number; metrics?: Record<string, number> } {
    const r = run.r;
    let loss = NaN;
    let metrics: Record<string, number> | undefined;
    const { grads } = tf.variableGrads(
      () =>
        this.within(run, (p) => {
          const o = this.objective(run, run.forward!(), p, owed, 0);
          loss = o.loss.dataSync()[0]!;
          const names = reportedNames(r.objective);
          if (names.length > 0)
            metrics = Object.fromEntries(
              reported(r.objective, run.ys, o.outs, o.each).map((t, i) => [names[i]!, t.dataSync()[0]!]),
            );
          return o.total;
        }),
      r.vars,
    );
    let off = 0;
    r.vars.forEach((v, i) => {
      flat.set(grads[v.name]!.dataSync() as Float32Array, off);
      off += r.sizes[i]!;
    });
    tf.dispose(Object.values(grads));
    return { loss, ...(metrics ? { metrics } : {}) };
  }

  private readonly counts: number[] = [];

  /** Runs `run` with the layers taking these statistics; the pass's tensors live until `run`'s caller disposes them. */
  private within<T>(known: Pick<Run, "means" | "variances">, run: (p: Pass) => T): T {
    const K = this.norms.length;
    const pass: Pass = {
      mean: Array.from({ length: K }, (_, i) => known.means[i] ?? null),
      variance: Array.from({ length: K }, (_, i) => known.variances[i] ?? null),
      sum: [],
      squares: [],
      count: [],
    };
    this.pass = pass;
    try {
      // Only a tensor result (a loss to differentiate) leaves the scope; the sums are read inside.
      let out: T | undefined;
      tf.tidy(() => {
        out = run(pass);
        return out instanceof tf.Tensor ? out : undefined;
      });
      return out as T;
    } finally {
      this.pass = null;
      tf.dispose([...pass.sum, ...pass.squares].filter((t): t is tf.Tensor => t !== null));
    }
  }

  /** The weighted loss (with regularizers) plus what later layers' statistics owe, as linear terms in this replica's sums. */
  private objective(
    run: Run,
    outs: tf.Tensor[],
    p: Pass,
    owed: ReadonlyArray<Owed | null>,
    from: number,
  ): { total: tf.Scalar; loss: tf.Scalar; outs: tf.Tensor[]; each: tf.Scalar[] } {
    const l = objectiveLoss(run.r.objective, run.ys, outs);
    let loss = l.total;
    for (const reg of run.r.model.calculateLosses()) loss = tf.add(loss, reg);
    let total = tf.mul(loss, run.weight) as tf.Scalar;
    for (let m = from; m < owed.length; m++) {
      const o = owed[m]!;
      const n = this.counts[m]!;
      total = tf.add(
        total,
        tf.add(tf.sum(tf.mul(o.mean, tf.div(p.sum[m]!, n))), tf.sum(tf.mul(o.variance, tf.div(p.squares[m]!, n)))),
      ) as tf.Scalar;
    }
    return { total, loss, outs, each: l.each };
  }

  /** Each layer's moving statistics moved once, by the global batch's, as BatchNormalization moves them. */
  private moveAverages(means: readonly tf.Tensor[], variances: readonly tf.Tensor[]): void {
    this.norms.forEach((n, l) => {
      tf.tidy(() => {
        const decay = 1 - n.momentum;
        n.movingMean.write(tf.sub(n.movingMean.read(), tf.mul(tf.sub(n.movingMean.read(), means[l]!), decay)));
        n.movingVariance.write(
          tf.sub(n.movingVariance.read(), tf.mul(tf.sub(n.movingVariance.read(), variances[l]!), decay)),
        );
      });
    });
  }
}
