import { COLORS, type Figure, type Trace } from "./figure";
import type { StepRecord, Departure, PushRecord } from "../metrics/records";
import { legendUnderAxis } from "./legend";

/**
 * How many pushes had each staleness (updates other pushes made between a push's pull and its
 * arrival), one bar series per run: sync is all zeros, async spreads out, a bound narrows it.
 */
export function stalenessFigure(
  series: ReadonlyArray<{ name: string; pushes: readonly PushRecord[] }>,
  title = "Staleness of pushes",
): Figure {
  const max = Math.max(0, ...series.flatMap((s) => s.pushes.map((p) => p.staleness)));
  const values = Array.from({ length: max + 1 }, (_, v) => String(v));
  return {
    data: series.map((s, i) => {
      const counts = new Array<number>(max + 1).fill(0);
      for (const p of s.pushes) counts[p.staleness]!++;
      const total = Math.max(1, s.pushes.length);
      return {
        type: "bar" as const,
        name: s.name,
        x: values,
        y: counts.map((c) => (100 * c) / total),
        marker: { color: COLORS.series[i % COLORS.series.length]! },
        hovertemplate: "staleness %{x}: %{y:.1f}% of pushes",
      };
    }),
    layout: legendUnderAxis({
      title: { text: title },
      barmode: "group",
      xaxis: { type: "category", title: { text: "staleness (updates missed between pull and push)" } },
      yaxis: { title: { text: "% of pushes" }, rangemode: "tozero" },
      height: 320,
    }),
  };
}

/** Training loss of each run against wall-clock seconds since its fit started; departures as dotted lines. */
export function lossFigure(
  series: ReadonlyArray<{ name: string; history: readonly StepRecord[]; departures?: readonly Departure[] }>,
  title = "Loss over time",
): Figure {
  const top = Math.max(0, ...series.flatMap((s) => s.history.map((h) => h.loss)));
  const data: Trace[] = [];
  series.forEach((s, i) => {
    const color = COLORS.series[i % COLORS.series.length]!;
    data.push({
      type: "scatter",
      mode: "lines",
      name: s.name,
      x: s.history.map((h) => h.endMs / 1000),
      y: s.history.map((h) => h.loss),
      line: { color, width: 2 },
    });
    for (const d of s.departures ?? []) {
      data.push({
        type: "scatter",
        mode: "lines",
        name: `${s.name}: rank ${d.rank} left`,
        x: [d.atMs / 1000, d.atMs / 1000],
        y: [0, top],
        line: { color, dash: "dot" },
      });
    }
  });
  return {
    data,
    layout: legendUnderAxis({
      title: { text: title },
      xaxis: { title: { text: "seconds since the fit started" } },
      yaxis: { title: { text: "training loss (per step or round)" }, rangemode: "tozero" },
      height: 340,
    }),
  };
}
