import type { MemberMemory } from "../metrics/records";
import { estimatedBytes, ownBytes } from "../metrics/memory-lines";
import type { Plan } from "../plan/plans";
import { barFigure } from "./bar";
import type { Figure } from "./figure";

const MiB = 2 ** 20;

/**
 * Each worker's memory in a fit, in MiB: what the plan estimated it would hold for training
 * beside what it measured (its peak resident set above the process's own, ownBytes: the
 * measured growth also holds what any fit adds, the step's buffers and the data).
 */
export function memoryFigure(plan: Plan, memory: readonly MemberMemory[]): Figure {
  const label = (m: MemberMemory): string => `${m.role === "ps" ? "server" : "rank"} ${m.rank}`;
  return barFigure(
    "Memory per worker: the plan's estimate and the measured peak",
    memory.map(label),
    {
      "plan's estimate (training state)": memory.map((m) => (estimatedBytes(plan, m) ?? 0) / MiB),
      ...(memory.some((m) => m.dataBytes)
        ? { 'data it loaded itself (feed "workers")': memory.map((m) => (m.dataBytes ?? 0) / MiB) }
        : {}),
      "measured: peak above the process's own": memory.map((m) => Math.max(0, m.peakRssBytes - ownBytes(m)) / MiB),
    },
    "MiB",
  );
}
