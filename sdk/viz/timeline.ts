import { COLORS, type Figure } from "./figure";
import type { StepRecord } from "../metrics/records";
import { legendUnderAxis } from "./legend";

export interface TimelineSpan {
  rank: number;
  step: number;
  /** ZeRO-2 and -3 steps show each layer's all-gather and reduce-scatter (`layer`) between the passes' computation. */
  phase: "compute" | "waiting" | "communication" | "update" | "all-gather" | "reduce-scatter";
  layer?: number;
  /** A bucket of several layers: its last. */
  lastLayer?: number;
  /** ms since the fit started, on the driver's clock. */
  startMs: number;
  durationMs: number;
}

/** Each worker's steps as consecutive spans: forward and backward, waiting, communication, update. */
export function timelineSpans(history: readonly StepRecord[]): TimelineSpan[] {
  const spans: TimelineSpan[] = [];
  for (const s of history) {
    for (const w of s.workers) {
      if (w.collectives?.length) {
        spans.push(...layerSpans(s.step, w));
        continue;
      }
      let t = w.startMs;
      const fwdBwd = Math.max(0, w.computeMs - w.applyMs);
      for (const [phase, d] of [
        ["compute", fwdBwd],
        ["waiting", w.waitMs],
        ["communication", w.commMs],
        ["update", w.applyMs],
      ] as const) {
        if (d > 0) spans.push({ rank: w.rank, step: s.step, phase, startMs: t, durationMs: d });
        t += d;
      }
    }
  }
  return spans;
}

/**
 * A ZeRO-2 or -3 step: its layers' collectives where they ran, the passes' computation between
 * them, and after the last the flags' all-reduce and the update (as "update").
 */
function layerSpans(step: number, w: StepRecord["workers"][number]): TimelineSpan[] {
  const spans: TimelineSpan[] = [];
  let at = 0;
  for (const c of [...w.collectives!].sort((a, b) => a.start - b.start)) {
    if (c.start > at)
      spans.push({ rank: w.rank, step, phase: "compute", startMs: w.startMs + at, durationMs: c.start - at });
    spans.push({
      rank: w.rank,
      step,
      phase: c.kind,
      layer: c.layer,
      ...(c.last !== undefined ? { lastLayer: c.last } : {}),
      startMs: w.startMs + c.start,
      durationMs: c.end - c.start,
    });
    at = Math.max(at, c.end);
  }
  const rest = w.computeMs + w.waitMs + w.commMs - at;
  if (rest > 0) spans.push({ rank: w.rank, step, phase: "update", startMs: w.startMs + at, durationMs: rest });
  return spans;
}

const PHASE_COLOR: Record<TimelineSpan["phase"], string> = {
  compute: COLORS.compute,
  waiting: COLORS.wait,
  communication: COLORS.comm,
  update: COLORS.apply,
  "all-gather": COLORS.series[2],
  "reduce-scatter": COLORS.comm,
};

/**
 * When each rank computed, waited and communicated, for steps [from, to); `marks` (a worker lost,
 * evicted or joined, when the driver learned of it) drawn where they fall in that time.
 */
export function timelineFigure(
  history: readonly StepRecord[],
  options: { from?: number; to?: number } = {},
  marks: ReadonlyArray<{ atMs: number; label: string }> = [],
): Figure {
  const from = options.from ?? 0;
  const to = options.to ?? Math.min(history.length, from + 8);
  const spans = timelineSpans(history.slice(from, to));
  const all = ["compute", "waiting", "communication", "update", "all-gather", "reduce-scatter"] as const;
  const phases = all.filter((p, i) => i < 4 || spans.some((s) => s.phase === p));
  const rows = [...new Set(spans.map((s) => s.rank))].sort((a, b) => a - b).map((r) => `rank ${r}`);
  const start = Math.min(...spans.map((s) => s.startMs));
  const end = Math.max(...spans.map((s) => s.startMs + s.durationMs));
  const shown = marks.filter((m) => m.atMs >= start && m.atMs <= end);
  return {
    data: [
      ...phases.map((phase) => {
        const mine = spans.filter((s) => s.phase === phase);
        return {
          type: "bar" as const,
          orientation: "h" as const,
          name: phase,
          y: mine.map((s) => `rank ${s.rank}`),
          x: mine.map((s) => s.durationMs),
          base: mine.map((s) => s.startMs),
          marker: { color: PHASE_COLOR[phase] },
          ...(phase === "all-gather" || phase === "reduce-scatter"
            ? {
                text: mine.map((s) =>
                  s.lastLayer !== undefined ? `layers ${s.layer}-${s.lastLayer}` : `layer ${s.layer}`,
                ),
              }
            : {}),
          hovertemplate:
            phase === "all-gather" || phase === "reduce-scatter"
              ? "%{text}: %{base:.1f} ms + %{x:.1f} ms"
              : "%{base:.1f} ms + %{x:.1f} ms",
        };
      }),
      ...shown.map((m, i) => ({
        type: "scatter" as const,
        mode: "lines" as const,
        name: m.label,
        x: [m.atMs, m.atMs],
        y: [rows[0], rows[rows.length - 1]],
        line: { color: COLORS.series[(i + 3) % COLORS.series.length]!, dash: "dash" as const, width: 2 },
      })),
    ],
    layout: legendUnderAxis({
      title: { text: `Timeline of steps ${from}-${to - 1}` },
      barmode: "overlay",
      xaxis: { title: { text: "ms since the fit started (driver clock)" } },
      yaxis: { type: "category", autorange: "reversed" },
      height: 170 + 36 * new Set(spans.map((s) => s.rank)).size,
      margin: { l: 70, r: 20, t: 50, b: 70 },
    }),
  };
}
