import { COLORS, type Figure } from "./figure";
import { legendUnderAxis } from "./legend";

/** One measured cluster size for scalingFigure: workers and their samples/s. */
export interface ScalingPoint {
  workers: number;
  samplesPerSecond: number;
}

/**
 * Speed-up over one worker against the ideal line, with scaling efficiency (speed-up / N) on the
 * right axis. Several series (e.g. meshtrain and a peer) may be compared.
 */
export function scalingFigure(
  series: Record<string, readonly ScalingPoint[]>,
  title = "Speed-up and scaling efficiency",
): Figure {
  const data: Figure["data"] = [];
  let maxN = 1;
  Object.entries(series).forEach(([name, points], i) => {
    const sorted = [...points].sort((a, b) => a.workers - b.workers);
    const base = sorted.find((p) => p.workers === 1)?.samplesPerSecond ?? sorted[0]?.samplesPerSecond ?? 1;
    const n = sorted.map((p) => p.workers);
    maxN = Math.max(maxN, ...n);
    const speedup = sorted.map((p) => p.samplesPerSecond / base);
    const color = COLORS.series[i % COLORS.series.length]!;
    data.push({
      type: "scatter",
      mode: "lines+markers",
      name: `${name} speed-up`,
      x: n,
      y: speedup,
      line: { color, width: 2 },
    });
    data.push({
      type: "scatter",
      mode: "lines+markers",
      name: `${name} efficiency`,
      x: n,
      y: speedup.map((s, j) => s / n[j]!),
      line: { color, dash: "dot" },
      yaxis: "y2",
    });
  });
  const ideal = Array.from({ length: maxN }, (_, i) => i + 1);
  data.unshift({
    type: "scatter",
    mode: "lines",
    name: "ideal",
    x: ideal,
    y: ideal,
    line: { color: COLORS.ideal, dash: "dash" },
  });
  return {
    data,
    layout: legendUnderAxis({
      title: { text: title },
      xaxis: { title: { text: "workers" } },
      yaxis: { title: { text: "speed-up" }, rangemode: "tozero" },
      yaxis2: { title: { text: "efficiency" }, overlaying: "y", side: "right", rangemode: "tozero" },
      height: 340,
    }),
  };
}
