import { defaultWarmup } from "../metrics/throughput";
import { COLORS, type Figure } from "./figure";
import type { StepRecord } from "../metrics/records";

/** Samples per second of each step, with a rolling median and the warm-up marked. */
export function throughputFigure(history: readonly StepRecord[], title = "Throughput per step", marks: ReadonlyArray<{ step: number; label: string }> = []): Figure {
  const steps = history.map((s) => s.step);
  const rate = history.map((s) => (s.ms > 0 ? (s.samples * 1000) / s.ms : 0));
  const window = 10;
  const rolling = rate.map((_, i) => {
    const w = rate.slice(Math.max(0, i - window + 1), i + 1).sort((a, b) => a - b);
    return w[Math.floor(w.length / 2)]!;
  });
  const warm = defaultWarmup(history.length);
  return {
    data: [
      { type: "scatter", mode: "markers", name: "per step", x: steps, y: rate, marker: { color: COLORS.wait }, hovertemplate: "step %{x}: %{y:.0f} samples/s" },
      { type: "scatter", mode: "lines", name: `median of ${window}`, x: steps, y: rolling, line: { color: COLORS.compute, width: 2 } },
      ...(warm > 0
        ? [{ type: "scatter" as const, mode: "lines" as const, name: "end of warm-up", x: [warm - 0.5, warm - 0.5], y: [0, Math.max(1, ...rate)], line: { color: COLORS.ideal, dash: "dot" as const } }]
        : []),
      // Workers that left or joined (elastic training), where training went on from.
      ...marks.map((m, i) => ({ type: "scatter" as const, mode: "lines" as const, name: m.label, x: [m.step - 0.5, m.step - 0.5], y: [0, Math.max(1, ...rate)], line: { color: COLORS.series[(i + 3) % COLORS.series.length]!, dash: "dash" as const, width: 2 } })),
    ],
    layout: {
      title: { text: title },
      xaxis: { title: { text: "step" } },
      yaxis: { title: { text: "samples / s" }, rangemode: "tozero" },
      height: 320,
      legend: { orientation: "h" },
    },
  };
}
