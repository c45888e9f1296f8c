import { formatBytes, keptElementsPerSample, RUNTIME_GROWTH_BYTES } from "./memory";
import type { LayerSummary } from "./model-summary";
import { describeCut, type Cut } from "../model/cuts";
import { perSample } from "./per-sample";

/** What one contiguous range of layers costs on one stage. */
export interface StageCost {
  /** Layers [from, to) of the model. */
  from: number;
  to: number;
  /** Forward FLOPs per sample. */
  flopsPerSample: number;
  /** Parameters, gradients and optimizer state, in bytes. */
  stateBytes: number;
  /** Peak activation memory: the inputs kept for micro-batches in flight plus one micro-batch's activations. */
  activationBytes: number;
}

/** What a stage's worker needs for it: its state, its activations and the runtime's own growth in a fit (RUNTIME_GROWTH_BYTES). */
export function stageNeedBytes(c: Pick<StageCost, "stateBytes" | "activationBytes">): number {
  return c.stateBytes + c.activationBytes + RUNTIME_GROWTH_BYTES;
}

/** A stage's need as messages give it: "6.1 MiB (... optimizer state; 580 KiB activations<note>; 2.4 MiB the runtime's own growth)". */
export function stageNeedText(c: Pick<StageCost, "stateBytes" | "activationBytes">, activationsNote = ""): string {
  const state = `${formatBytes(c.stateBytes)} parameters, gradients and optimizer state`;
  const activations = `${formatBytes(c.activationBytes)} activations${activationsNote}`;
  return `${formatBytes(stageNeedBytes(c))} (${state}; ${activations}; ${formatBytes(RUNTIME_GROWTH_BYTES)} the runtime's own growth)`;
}

export interface PartitionRequest {
  layers: readonly LayerSummary[];
  stages: number;
  microBatchSize: number;
  /** Optimizer slots per trainable parameter (sgd 0, momentum 1, adam 2, ...). */
  optimizerSlots: number;
  /** Micro-batches in flight on stage s (GPipe: M; 1F1B: S - s; model parallelism: 1). */
  inFlight(stage: number): number;
  /** Memory each stage may use, in bytes (Infinity when unlimited). */
  memoryBytes(stage: number): number;
  /** Stages whose layer range is fixed (plan.place); the others are split around them. */
  pinned?: ReadonlyMap<number, readonly [number, number]>;
  /** Where stages may begin and end (the model's cut points); every point when absent. */
  cuts?: readonly Cut[];
}

export function stageCost(r: PartitionRequest, stage: number, from: number, to: number): StageCost {
  const ls = r.layers.slice(from, to);
  const params = ls.reduce((n, l) => n + l.params, 0);
  const trainable = ls.reduce((n, l) => n + l.trainableParams, 0);
  const cut = r.cuts?.[from];
  const inputBytes = perSample(cut?.ok ? cut.shape : r.layers[from]!.inputShape) * 4 * r.microBatchSize;
  const actBytes = keptElementsPerSample(ls) * 4 * r.microBatchSize;
  return {
    from,
    to,
    flopsPerSample: ls.reduce((n, l) => n + l.flopsPerSample, 0),
    stateBytes: params * 4 + trainable * 4 * (1 + r.optimizerSlots),
    activationBytes: r.inFlight(stage) * inputBytes + actBytes,
  };
}

export type Partition = { ok: true; stages: StageCost[] } | { ok: false; reason: string };

/**
 * Splits the layers into `stages` contiguous ranges, minimising the slowest stage's FLOPs, with
 * every stage within its memory. Dynamic programming over (stage, last layer): exact for this
 * cost model. Fails, with the arithmetic, when no split fits.
 */
export function partition(r: PartitionRequest): Partition {
  const L = r.layers.length;
  const S = r.stages;
  if (S < 1 || S > L)
    return { ok: false, reason: `${S} stages cannot split ${L} layers (each stage needs at least one layer)` };
  const allowed = (j: number): boolean => !r.cuts || r.cuts[j]?.ok === true;
  const points = Array.from({ length: L - 1 }, (_, k) => k + 1).filter(allowed);
  if (points.length < S - 1) return { ok: false, reason: tooFewCuts(r, S, points) };
  // best[s][j]: minimal slowest-stage FLOPs placing layers [0, j) on stages [0, s]
  const best: number[][] = Array.from({ length: S }, () => new Array<number>(L + 1).fill(Infinity));
  const cut: number[][] = Array.from({ length: S }, () => new Array<number>(L + 1).fill(-1));
  const fits = (s: number, i: number, j: number): StageCost | null => {
    const pin = r.pinned?.get(s);
    if (pin && (pin[0] !== i || pin[1] !== j)) return null;
    const c = stageCost(r, s, i, j);
    // A placed stage is the user's choice: its memory is checked, with its own message, by the planner.
    if (pin) return c;
    return stageNeedBytes(c) <= r.memoryBytes(s) ? c : null;
  };
  for (let j = 1; j <= L; j++) {
    const c = fits(0, 0, j);
    if (c) best[0]![j] = c.flopsPerSample;
  }
  for (let s = 1; s < S; s++) {
    for (let j = s + 1; j <= L; j++) {
      for (let i = s; i < j; i++) {
        if (!allowed(i) || !Number.isFinite(best[s - 1]![i]!)) continue;
        const c = fits(s, i, j);
        if (!c) continue;
        const v = Math.max(best[s - 1]![i]!, c.flopsPerSample);
        if (v < best[s]![j]!) {
          best[s]![j] = v;
          cut[s]![j] = i;
        }
      }
    }
  }
  if (!Number.isFinite(best[S - 1]![L]!)) return noSplit(r, L, S);
  const bounds: number[] = [L];
  for (let s = S - 1, j = L; s > 0; s--) {
    j = cut[s]![j]!;
    bounds.unshift(j);
  }
  bounds.unshift(0);
  return { ok: true, stages: Array.from({ length: S }, (_, s) => stageCost(r, s, bounds[s]!, bounds[s + 1]!)) };
}

/** Why no split fits the memory: the placed stages, or the layer that alone needs the most. */
function noSplit(r: PartitionRequest, L: number, S: number): Partition {
  if (r.pinned && r.pinned.size > 0) {
    return {
      ok: false,
      reason: `no split of the layers left around the placed stages (${[...r.pinned].map(([s, [a, b]]) => `stage ${s} = [${a}, ${b})`).join(", ")}) fits the memory with at least one layer per stage`,
    };
  }
  const biggest = r.layers
    .map((_, i) => ({ i, c: stageCost(r, 0, i, i + 1) }))
    .sort((a, b) => stageNeedBytes(b.c) - stageNeedBytes(a.c))[0]!;
  const need = stageNeedBytes(biggest.c);
  return {
    ok: false,
    reason: `no split of ${L} layers into ${S} stages fits the memory (layer ${biggest.i} "${r.layers[biggest.i]!.name}" alone needs ${(need / 2 ** 20).toFixed(1)} MiB; stage 0 may use ${(r.memoryBytes(0) / 2 ** 20).toFixed(1)} MiB)`,
  };
}

/** Why the model's cut points cannot make S stages: how many there are, and the blocks between. */
function tooFewCuts(r: PartitionRequest, S: number, points: readonly number[]): string {
  const inside = (r.cuts ?? []).find((c): c is Extract<Cut, { ok: false }> => !c.ok);
  const where = points.length === 0 ? "none" : `before layer${points.length > 1 ? "s" : ""} ${points.join(", ")}`;
  return `${S} stages need ${S - 1} point(s) where exactly one tensor passes from one stage to the next; this model has ${points.length} (${where}): every other point is ${inside ? describeCut(inside) : "inside a block"}, which stays whole within a stage`;
}
