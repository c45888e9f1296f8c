import type { Layout } from "./figure";

/**
 * Pixels under a plot's area that its x tick labels and x-axis title take: Plotly 4 put the
 * title's baseline 55 px under the area (measured in Chromium, tutorial 01's timeline).
 */
const AXIS_PX = 62;
/**
 * Pixels one row of legend entries takes (29 measured), with room to spare: a legend that
 * does not fit the bottom margin makes Plotly grow it, which shrinks the plot area the legend's
 * fractional y is measured in, and the legend climbs back over the labels.
 */
const LEGEND_PX = 40;
/** Plotly's default figure height, for a layout that sets none. */
const PLOTLY_HEIGHT = 450;

/**
 * The layout with its legend in one row under the x-axis title. Plotly puts a horizontal
 * legend a tenth of the plot's height below its area: over the tick labels of a short plot (a
 * two-rank timeline's area is 120 px high). Plotly's legend y is a fraction of the plot area's
 * height, so the offset in pixels is turned into one; the figure grows by what its bottom
 * margin gains, so the plot area keeps its size.
 */
export function legendUnderAxis(layout: Layout): Layout {
  const margin = layout.margin ?? { l: 80, r: 80, t: 100, b: 80 };
  const b = Math.max(margin.b, AXIS_PX + LEGEND_PX);
  const height = (layout.height ?? PLOTLY_HEIGHT) + (b - margin.b);
  const area = Math.max(1, height - margin.t - b);
  return {
    ...layout,
    height,
    margin: { ...margin, b },
    legend: { orientation: "h", x: 0, xanchor: "left", y: -AXIS_PX / area, yanchor: "top" },
  };
}
