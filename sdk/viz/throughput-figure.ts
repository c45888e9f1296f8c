import { defaultWarmup } from "../metrics/throughput";
import { COLORS, type Figure } from "./figure";
import type { StepRecord } from "../metrics/records";
import { legendUnderAxis } from "./legend";

/** Samples per second of each step, with a rolling median and the warm-up marked. */
export function throughputFigure(
  history: readonly StepRecord[],
  title = "Throughput per step",
  marks: ReadonlyArray<{ step: number; label: string }> = [],
): Figure {
  const steps = history.map((s) => s.step);
  const rate = history.map((s) => (s.ms > 0 ? (s.samples * 1000) / s.ms : 0));
  const window = 10;
  const rolling = rollingMedian(rate, window);
  const warm = defaultWarmup(history.length);
  return {
    data: [
      {
        type: "scatter",
        mode: "markers",
        name: "per step",
        x: steps,
        y: rate,
        marker: { color: COLORS.wait },
        hovertemplate: "step %{x}: %{y:.0f} samples/s",
      },
      {
        type: "scatter",
        mode: "lines",
        name: `median of ${window}`,
        x: steps,
        y: rolling,
        line: { color: COLORS.compute, width: 2 },
      },
      ...(warm > 0
        ? [{ ...before(warm, rate, "end of warm-up"), line: { color: COLORS.ideal, dash: "dot" as const } }]
        : []),
      // Workers that left or joined (elastic training), where training went on from.
      ...marks.map((m, i) => ({
        ...before(m.step, rate, m.label),
        line: { color: COLORS.series[(i + 3) % COLORS.series.length]!, dash: "dash" as const, width: 2 },
      })),
    ],
    layout: legendUnderAxis({
      title: { text: title },
      xaxis: { title: { text: "step" } },
      yaxis: { title: { text: "samples / s" }, rangemode: "tozero" },
      height: 320,
    }),
  };
}

/** Each value's median over the `window` values ending at it. */
function rollingMedian(values: readonly number[], window: number): number[] {
  return values.map((_, i) => {
    const w = values.slice(Math.max(0, i - window + 1), i + 1).sort((a, b) => a - b);
    return w[Math.floor(w.length / 2)]!;
  });
}

/** A vertical line just before `step`, from 0 to the highest rate. */
function before(step: number, rate: readonly number[], name: string) {
  return {
    type: "scatter" as const,
    mode: "lines" as const,
    name,
    x: [step - 0.5, step - 0.5],
    y: [0, Math.max(1, ...rate)],
  };
}
