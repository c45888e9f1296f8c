import { actionLabel, simulate, type Schedule } from "../plan/schedules";
import { COLORS, type Figure, type Trace } from "./figure";
import type { StepRecord } from "../metrics/records";
import { legendUnderAxis } from "./legend";

interface Bar {
  row: string;
  kind: "F" | "B";
  micro: number;
  start: number;
  end: number;
}

const KIND_COLOR = { F: COLORS.compute, B: COLORS.comm } as const;
const KIND_NAME = { F: "forward", B: "backward (recomputes the forward)" } as const;

function figure(bars: readonly Bar[], title: string, xTitle: string, rows: number): Figure {
  const data: Trace[] = (["F", "B"] as const).map((kind) => {
    const mine = bars.filter((b) => b.kind === kind);
    return {
      type: "bar",
      orientation: "h",
      name: KIND_NAME[kind],
      y: mine.map((b) => b.row),
      x: mine.map((b) => b.end - b.start),
      base: mine.map((b) => b.start),
      text: mine.map((b) => actionLabel(b)),
      textposition: "inside",
      marker: { color: KIND_COLOR[kind] },
      hovertemplate: "%{text}: %{base:.2f} + %{x:.2f}",
    };
  });
  return {
    data,
    layout: legendUnderAxis({
      title: { text: title },
      barmode: "overlay",
      xaxis: { title: { text: xTitle } },
      yaxis: { type: "category", autorange: "reversed" },
      height: 170 + 34 * rows,
      margin: { l: 110, r: 20, t: 50, b: 70 },
    }),
  };
}

/**
 * The schedule as planned: every stage's actions laid out with forward = 1 and backward = 2 time
 * units (a backward recomputes the forward and does twice its work), each as soon as its inputs
 * exist. The white space is the bubble the theory predicts.
 */
export function scheduleFigure(schedule: Schedule): Figure {
  const timed = simulate(schedule);
  const bars = timed.flatMap((acts, s) =>
    acts.map((a) => ({ row: `stage ${s}`, kind: a.kind, micro: a.micro, start: a.start, end: a.end })),
  );
  return figure(
    bars,
    `${schedule.name === "gpipe" ? "GPipe" : "1F1B"} schedule, ${schedule.stages} stages x ${schedule.microBatches} micro-batches (planned)`,
    "time (forward = 1 unit, backward = 2)",
    schedule.stages,
  );
}

/**
 * One step as it ran: when each worker ran each forward and backward, on the driver's clock,
 * from the step's first action. Gaps are the measured bubble (waiting for a neighbour, or idle).
 */
export function measuredScheduleFigure(history: readonly StepRecord[], step?: number): Figure {
  const rec =
    step === undefined
      ? history[Math.min(history.length - 1, Math.max(0, Math.floor(history.length / 2)))]
      : history.find((h) => h.step === step);
  if (!rec) return figure([], "no such step", "ms", 0);
  const withActions = rec.workers.filter((w) => (w.actions ?? []).length > 0);
  const t0 = Math.min(...withActions.flatMap((w) => w.actions!.map((a) => w.startMs + a.start)));
  const bars = withActions.flatMap((w) =>
    w.actions!.map((a) => ({
      row: `rank ${w.rank} (s${w.stage ?? 0}${(w.replica ?? 0) > 0 || withActions.some((v) => (v.replica ?? 0) > 0) ? ` r${w.replica ?? 0}` : ""})`,
      kind: a.kind,
      micro: a.micro,
      start: w.startMs + a.start - t0,
      end: w.startMs + a.end - t0,
    })),
  );
  const bubble = rec.bubble === undefined ? "" : `, bubble ${(rec.bubble * 100).toFixed(0)}%`;
  return figure(
    bars,
    `Step ${rec.step} as measured${bubble}`,
    "ms from the step's first action (driver clock)",
    withActions.length,
  );
}
