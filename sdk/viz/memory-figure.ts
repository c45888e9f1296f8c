import type { MemberMemory } from "../metrics/records";
import { estimatedBytes } from "../metrics/memory-lines";
import type { Plan } from "../plan/plans";
import { barFigure } from "./bar";
import type { Figure } from "./figure";

const MiB = 2 ** 20;

/**
 * Each worker's memory in a fit, in MiB: what the plan estimated it would hold for training
 * beside what it measured (its peak resident set above the process without a model, which
 * also holds what any fit adds: buffers, the data, the threads' heaps).
 */
export function memoryFigure(plan: Plan, memory: readonly MemberMemory[]): Figure {
  const label = (m: MemberMemory): string => `${m.role === "ps" ? "server" : "rank"} ${m.rank}`;
  return barFigure(
    "Memory per worker: the plan's estimate and the measured peak",
    memory.map(label),
    {
      "plan's estimate (training state)": memory.map((m) => (estimatedBytes(plan, m) ?? 0) / MiB),
      ...(memory.some((m) => m.dataBytes) ? { "data it loaded itself (feed \"workers\")": memory.map((m) => (m.dataBytes ?? 0) / MiB) } : {}),
      "measured: peak above the idle process": memory.map((m) => Math.max(0, m.peakRssBytes - m.idleRssBytes) / MiB),
    },
    "MiB",
  );
}
