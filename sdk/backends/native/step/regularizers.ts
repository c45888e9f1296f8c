import type { Config, LayerCall } from "./layer-call";
import type { ParamSlot, StepContext } from "./op";

/** A weight's L1/L2 penalty, added to the loss as model.fit adds layer losses (frozen weights' too: their value counts, they get no gradient). */
export interface Penalty {
  slot: ParamSlot;
  l1: number;
  l2: number;
}

/** The weight each regularizer option of tfjs-layers' configs applies to. */
const WEIGHTS: Readonly<Record<string, string>> = {
  kernelRegularizer: "kernel",
  biasRegularizer: "bias",
  recurrentRegularizer: "recurrent_kernel",
  embeddingsRegularizer: "embeddings",
  gammaRegularizer: "gamma",
  betaRegularizer: "beta",
  depthwiseRegularizer: "depthwise_kernel",
  pointwiseRegularizer: "pointwise_kernel",
  alphaRegularizer: "alpha",
};

/** The penalties of a layer's weights, or why the step cannot compute them. */
export function penaltiesOf(c: Pick<LayerCall, "name" | "cfg" | "param">): Penalty[] | string {
  const out: Penalty[] = [];
  for (const [key, value] of Object.entries(c.cfg)) {
    if (!key.endsWith("Regularizer") || value === null || value === undefined) continue;
    if (key === "activityRegularizer") return `${c.name} has an activity regularizer`;
    const weight = WEIGHTS[key];
    const r = value as { className?: string; class_name?: string; config?: Config };
    const cls = r.className ?? r.class_name;
    if (!weight || (cls !== "L1L2" && cls !== "l1l2")) return `${c.name} has a ${key} of class ${String(cls)}`;
    const slot = c.param(weight);
    if (!slot) continue;
    const l1 = Number(r.config?.l1 ?? 0.01);
    const l2 = Number(r.config?.l2 ?? 0.01);
    if (l1 !== 0 || l2 !== 0) out.push({ slot, l1, l2 });
  }
  return out;
}

/**
 * Adds the penalty's gradient x scale to the weight's gradient, which its layer's backward pass
 * has written; returns the penalty, l1 sum|w| + l2 sum w^2 (native/src/penalty.c).
 */
export function applyPenalty(ctx: StepContext, p: Penalty, scale: number): number {
  const g = ctx.grad(p.slot);
  return ctx.addon.penalty(ctx.values(p.slot.variable), g ? g.view : null, p.l1, p.l2, scale);
}
