import { defaultWarmup } from "../metrics/throughput";
import { COLORS, type Figure } from "./figure";
import type { StepRecord } from "../metrics/records";
import { median } from "../util/median";
import { legendUnderAxis } from "./legend";

/**
 * Median time per step on each rank, split into compute, communication and waiting, stacked. A
 * rank on a GPU also shows its device transfers (reading the step's results back, uploading the
 * update), carved out of its compute.
 */
export function breakdownFigure(
  history: readonly StepRecord[],
  title = "Step time per rank (median after warm-up)",
): Figure {
  const window = history.slice(defaultWarmup(history.length));
  const ranks = [...new Set(window.flatMap((s) => s.workers.map((w) => w.rank)))].sort((a, b) => a - b);
  const of = (rank: number, pick: (w: StepRecord["workers"][number]) => number): number =>
    median(window.flatMap((s) => s.workers.filter((w) => w.rank === rank)).map(pick));
  const x = ranks.map((r) => `rank ${r}`);
  return {
    data: [
      {
        type: "bar",
        name: "compute",
        x,
        y: ranks.map((r) => of(r, (w) => w.computeMs - (w.readbackMs ?? 0) - (w.uploadMs ?? 0))),
        marker: { color: COLORS.compute },
      },
      ...(window.some((s) => s.workers.some((w) => w.readbackMs !== undefined))
        ? [
            {
              type: "bar" as const,
              name: "GPU readback",
              x,
              y: ranks.map((r) => of(r, (w) => w.readbackMs ?? 0)),
              marker: { color: COLORS.readback },
            },
            {
              type: "bar" as const,
              name: "GPU upload",
              x,
              y: ranks.map((r) => of(r, (w) => w.uploadMs ?? 0)),
              marker: { color: COLORS.upload },
            },
          ]
        : []),
      {
        type: "bar",
        name: "communication",
        x,
        y: ranks.map((r) => of(r, (w) => w.commMs)),
        marker: { color: COLORS.comm },
      },
      { type: "bar", name: "waiting", x, y: ranks.map((r) => of(r, (w) => w.waitMs)), marker: { color: COLORS.wait } },
    ],
    layout: legendUnderAxis({
      title: { text: title },
      barmode: "stack",
      xaxis: { type: "category" },
      yaxis: { title: { text: "ms per step" }, rangemode: "tozero" },
      height: 320,
    }),
  };
}
