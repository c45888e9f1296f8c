import { COLORS, type Figure } from "./figure";
import { legendUnderAxis } from "./legend";

/** Bars of named series over categories: for the comparison tables of the tutorials. */
export function barFigure(
  title: string,
  categories: readonly string[],
  series: Record<string, readonly number[]>,
  yTitle: string,
): Figure {
  return {
    data: Object.entries(series).map(([name, values], i) => ({
      type: "bar" as const,
      name,
      x: [...categories],
      y: [...values],
      marker: { color: COLORS.series[i % COLORS.series.length]! },
    })),
    layout: legendUnderAxis({
      title: { text: title },
      barmode: "group",
      xaxis: { type: "category" },
      yaxis: { title: { text: yTitle }, rangemode: "tozero" },
      height: 320,
    }),
  };
}
