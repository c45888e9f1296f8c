import { timelineSpans } from "./timeline";
import type { StepRecord } from "../metrics/records";

/** Chrome's trace-event format, which Perfetto (ui.perfetto.dev) and chrome://tracing open. */
export interface ChromeTrace {
  traceEvents: Array<{
    name: string;
    cat: string;
    ph: "X" | "M" | "i";
    /** Instant events: "g", across every rank. */
    s?: "g";
    ts: number;
    dur?: number;
    pid: number;
    tid: number;
    args?: Record<string, unknown>;
  }>;
  displayTimeUnit: "ms";
}

/**
 * One process per rank, one complete event per phase of each step, and an instant event across
 * all of them for each of `marks` (a worker lost, evicted or joined); times in microseconds.
 */
export function chromeTrace(
  history: readonly StepRecord[],
  marks: ReadonlyArray<{ atMs: number; label: string }> = [],
): ChromeTrace {
  const spans = timelineSpans(history);
  const ranks = [...new Set(spans.map((s) => s.rank))].sort((a, b) => a - b);
  return {
    displayTimeUnit: "ms",
    traceEvents: [
      ...ranks.map((rank) => ({
        name: "process_name",
        cat: "__metadata",
        ph: "M" as const,
        ts: 0,
        pid: rank,
        tid: 0,
        args: { name: `rank ${rank}` },
      })),
      ...spans.map((s) => ({
        name: s.phase,
        cat: "step",
        ph: "X" as const,
        ts: Math.round(s.startMs * 1000),
        dur: Math.max(1, Math.round(s.durationMs * 1000)),
        pid: s.rank,
        tid: 0,
        args: {
          step: s.step,
          ...(s.layer !== undefined ? { layer: s.layer } : {}),
          ...(s.lastLayer !== undefined ? { lastLayer: s.lastLayer } : {}),
        },
      })),
      ...marks.map((m) => ({
        name: m.label,
        cat: "membership",
        ph: "i" as const,
        s: "g" as const,
        ts: Math.round(m.atMs * 1000),
        pid: ranks[0] ?? 0,
        tid: 0,
      })),
    ],
  };
}
