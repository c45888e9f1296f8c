import type { MemberMemory } from "./records";
import type { WorkerMemory } from "../protocol/worker-memory";
import { formatBytes, memoryTotal } from "../plan/memory";
import { stageNeedBytes } from "../plan/partition";
import type { Plan } from "../plan/plans";

/**
 * What the plan estimated `m` would hold for training (weights, gradient, optimizer state,
 * activations), where it estimated that member at all: a replica or ps worker the plan's
 * memory, a pipeline stage its stage's; servers have no estimate.
 */
export function estimatedBytes(plan: Plan, m: Pick<MemberMemory, "rank" | "role">): number | null {
  if (m.role === "ps") return null;
  // A plan of replicas estimates one memory for each; a plan of stages, each stage's.
  if (!("stagePlans" in plan)) return memoryTotal(plan.memory);
  const stage = plan.ranks.map((row) => row.indexOf(m.rank)).find((s) => s >= 0);
  if (stage === undefined) return null;
  const st = plan.stagePlans[stage]!;
  return stageNeedBytes(st);
}

/**
 * What `m` held of its own: the process without a model (measured), with V8's young
 * generation as the fit had it rather than as the idle process did (V8 sizes it as it sees
 * fit: it swung 30 MiB between fits of one worker).
 */
export function ownBytes(m: Pick<WorkerMemory, "idleRssBytes" | "youngIdleBytes" | "youngFitBytes">): number {
  return Math.max(0, m.idleRssBytes - (m.youngIdleBytes ?? 0) + (m.youngFitBytes ?? 0));
}

/**
 * What `m` was predicted to hold at its peak: its own (ownBytes), the plan's estimate of the
 * training state, and the dataset it loaded itself (feed "workers", whose bytes it reported);
 * null where the plan has no estimate for it.
 */
export function predictedPeakBytes(plan: Plan, m: MemberMemory): number | null {
  const est = estimatedBytes(plan, m);
  return est === null ? null : ownBytes(m) + est + (m.dataBytes ?? 0);
}

/**
 * One line per member: the peak resident set during the fit, how far above what the process
 * held without a model it went (the fit's own memory, set beside the plan's estimate and the
 * data it loaded), the peak beside the one predicted, and TF.js's tensors at the end.
 */
export function memoryLines(plan: Plan, memory: readonly MemberMemory[]): string[] {
  return memory.map((m) => {
    const grew = Math.max(0, m.peakRssBytes - ownBytes(m));
    const est = estimatedBytes(plan, m);
    const data = m.dataBytes ?? 0;
    const held = data > 0 ? ` + ${formatBytes(data)} of data it loaded` : "";
    // A model of a few KiB grows the process by what any fit does (tens of MiB): no ratio worth showing.
    const predicted = predictedPeakBytes(plan, m);
    const ratios =
      est !== null && predicted !== null && est >= 2 ** 20
        ? ` (measured ${(grew / (est + data)).toFixed(2)}x; the peak ${(m.peakRssBytes / predicted).toFixed(2)}x the ${formatBytes(predicted)} predicted with the process's own)`
        : "";
    const vs = est === null || est <= 0 ? "" : `; the plan estimated ${formatBytes(est)}${held}${ratios}`;
    if (m.peakFrom === "tensors")
      return `rank ${m.rank} memory (a browser tab: TF.js's count only): largest after a step ${formatBytes(m.peakRssBytes)}, ${formatBytes(grew)} above its count without a model${vs}; tensors held at the end ${formatBytes(m.tensorBytes)}`;
    const how = m.peakFrom === "kernel" ? "peak" : "largest sampled";
    return `${m.role === "ps" ? "server" : "rank"} ${m.rank} memory: ${how} resident set ${formatBytes(m.peakRssBytes)}, ${formatBytes(grew)} above the worker's without a model${vs}; tensors held at the end ${formatBytes(m.tensorBytes)}`;
  });
}
