import * as tf from "@tensorflow/tfjs";
import type { LoadOf } from "../protocol/messages";
import { ModelError } from "../errors/errors";
import type { LossName } from "../protocol/loss-names";
import type { MetricSpec } from "../protocol/metric-spec";
import { rowsOf, type Tensorlike } from "../protocol/tensor";
import { compiledLosses } from "../model/model-io";
import { classWeighted } from "./class-weights";

type LossFn = (y: tf.Tensor, out: tf.Tensor) => tf.Tensor;

/** One model output as training sees it: its name, its loss (class-weighted where asked), the plain loss validation takes, its weight in the total. */
export interface Head {
  name: string;
  loss: LossFn;
  plain: LossFn;
  weight: number;
}

/**
 * What a replica minimises and reports: the weighted sum of its outputs' mean losses (one
 * output: that output's loss, as model.fit), and the compiled metrics, each on its output. With
 * several outputs each output's own loss is reported too, named as model.fit's History names it
 * ("<output>_loss").
 */
export interface Objective {
  heads: Head[];
  /** Each metric's `output` is the position of its output among `heads`. */
  metrics: MetricSpec[];
  /** The model has several outputs: each head's own loss is reported ("<output>_loss"). */
  named: boolean;
}

/** The objective a load message describes, built from loss names with model.compile's own functions. */
export function objectiveOf(
  model: tf.LayersModel,
  msg: Pick<LoadOf<"replica">, "loss" | "heads" | "classWeight" | "metrics">,
  optimizer: tf.Optimizer,
): Objective {
  const n = model.outputs.length;
  const given: Array<{ loss: LossName; weight: number }> =
    msg.heads ?? Array.from({ length: n }, () => ({ loss: msg.loss, weight: 1 }));
  if (given.length !== n)
    throw new ModelError(`the model has ${n} outputs but ${given.length} losses were sent, one per output`);
  if (msg.classWeight && n > 1)
    throw new ModelError(`classWeight weighs one output's classes; this model has ${n} outputs`);
  const plain = compiledLosses(
    model,
    given.map((h) => h.loss),
    optimizer,
  );
  const heads = given.map((h, k) => ({
    name: model.outputNames[k] ?? `output${k}`,
    plain: plain[k]!,
    loss: msg.classWeight ? classWeighted(plain[k]!, msg.classWeight) : plain[k]!,
    weight: h.weight,
  }));
  return { heads, metrics: msg.metrics ?? [], named: n > 1 };
}

/**
 * The part of the objective a pipeline stage computes: the losses and metrics of the model
 * outputs it makes (`heads`, by model output index), or null for a stage that makes none. A
 * stage that passes an activation on lists it as its first output, which takes no loss.
 */
export function stageObjective(
  stage: tf.LayersModel,
  msg: Pick<LoadOf<"stage">, "loss" | "heads" | "classWeight" | "metrics">,
  heads: readonly number[],
  passes: boolean,
  optimizer: tf.Optimizer,
): Objective | null {
  if (heads.length === 0) return null;
  const spec = msg.heads ?? [{ loss: msg.loss, weight: 1 }];
  const missing = heads.find((k) => spec[k] === undefined);
  if (missing !== undefined)
    throw new ModelError(`stage makes model output ${missing}, but the load names losses for ${spec.length} output(s)`);
  const skip = passes ? 1 : 0;
  const fns = compiledLosses(
    stage,
    [...(passes ? (["meanSquaredError"] as const) : []), ...heads.map((k) => spec[k]!.loss)],
    optimizer,
  ).slice(skip);
  if (msg.classWeight && spec.length > 1)
    throw new ModelError(`classWeight weighs one output's classes; this model has ${spec.length} outputs`);
  return {
    heads: heads.map((k, i) => ({
      name: stage.outputNames[skip + i] ?? `output${k}`,
      plain: fns[i]!,
      loss: msg.classWeight ? classWeighted(fns[i]!, msg.classWeight) : fns[i]!,
      weight: spec[k]!.weight,
    })),
    metrics: (msg.metrics ?? [])
      .filter((m) => heads.includes(m.output ?? 0))
      .map((m) => ({ ...m, output: heads.indexOf(m.output ?? 0) })),
    named: msg.heads !== undefined,
  };
}

/** The batch's loss: sum over outputs of weight x mean loss (plain: without class weights, for validation), and each output's mean. */
export function objectiveLoss(
  o: Objective,
  ys: readonly tf.Tensor[],
  outs: readonly tf.Tensor[],
  plain = false,
): { total: tf.Scalar; each: tf.Scalar[] } {
  const each = o.heads.map((h, k) => tf.mean((plain ? h.plain : h.loss)(ys[k]!, outs[k]!)) as tf.Scalar);
  if (each.length === 1 && o.heads[0]!.weight === 1) return { total: each[0]!, each };
  const total = each.reduce<tf.Scalar>((sum, l, k) => tf.add(sum, tf.mul(l, o.heads[k]!.weight)), tf.scalar(0));
  return { total, each };
}

/** The names of what `reported` computes: the compiled metrics, then each output's loss where there are several. */
export function reportedNames(o: Objective): string[] {
  return [...o.metrics.map((m) => m.name), ...(o.named ? o.heads.map((h) => `${h.name}_loss`) : [])];
}

/** The metrics (each on its output) and, with several outputs, each output's mean loss, as scalars in reportedNames' order. */
export function reported(
  o: Objective,
  ys: readonly tf.Tensor[],
  outs: readonly tf.Tensor[],
  each: readonly tf.Scalar[],
): tf.Scalar[] {
  const metrics = o.metrics.map(
    (s) => tf.mean(tf.metrics[s.fn](ys[s.output ?? 0]!, outs[s.output ?? 0]!)) as tf.Scalar,
  );
  return [...metrics, ...(o.named ? each : [])];
}

/** A model's outputs as a list, however many it has. */
export function outputList(out: tf.Tensor | tf.Tensor[]): tf.Tensor[] {
  return Array.isArray(out) ? out : [out];
}

/** A batch's inputs or targets as they arrive: one tensor per model input (or output). */
export type Feed = Tensorlike | readonly Tensorlike[];

export function feedList(f: Feed): readonly Tensorlike[] {
  return Array.isArray(f) ? (f as readonly Tensorlike[]) : [f as Tensorlike];
}

/** The samples in a feed (its first tensor's first dimension). */
export function feedRows(f: Feed): number {
  return feedList(f)[0]?.shape[0] ?? 0;
}

/** A step's attachments cut into the model's inputs and targets (one per output); null when the count is wrong. */
export function splitFeed(
  model: tf.LayersModel,
  attachments: readonly Tensorlike[],
): { x: Tensorlike[]; y: Tensorlike[] } | null {
  const k = model.inputs.length;
  if (attachments.length !== k + model.outputs.length) return null;
  return { x: attachments.slice(0, k), y: attachments.slice(k) };
}

/** Rows [from, to) of every tensor of a feed. */
export function feedRowsOf(f: Feed, from: number, to: number): Tensorlike[] {
  return feedList(f).map((t) => rowsOf(t, from, to));
}
