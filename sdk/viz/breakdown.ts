import { defaultWarmup } from "../metrics/throughput";
import { COLORS, type Figure } from "./figure";
import type { StepRecord } from "../metrics/records";
import { median } from "../util/median";

/** Median time per step on each rank, split into compute, communication and waiting, stacked. */
export function breakdownFigure(history: readonly StepRecord[], title = "Step time per rank (median after warm-up)"): Figure {
  const window = history.slice(defaultWarmup(history.length));
  const ranks = [...new Set(window.flatMap((s) => s.workers.map((w) => w.rank)))].sort((a, b) => a - b);
  const of = (rank: number, pick: (w: StepRecord["workers"][number]) => number): number =>
    median(window.flatMap((s) => s.workers.filter((w) => w.rank === rank)).map(pick));
  const x = ranks.map((r) => `rank ${r}`);
  return {
    data: [
      { type: "bar", name: "compute", x, y: ranks.map((r) => of(r, (w) => w.computeMs)), marker: { color: COLORS.compute } },
      { type: "bar", name: "communication", x, y: ranks.map((r) => of(r, (w) => w.commMs)), marker: { color: COLORS.comm } },
      { type: "bar", name: "waiting", x, y: ranks.map((r) => of(r, (w) => w.waitMs)), marker: { color: COLORS.wait } },
    ],
    layout: {
      title: { text: title },
      barmode: "stack",
      xaxis: { type: "category" },
      yaxis: { title: { text: "ms per step" }, rangemode: "tozero" },
      height: 320,
      legend: { orientation: "h" },
    },
  };
}
