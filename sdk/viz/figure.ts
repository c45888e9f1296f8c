/**
 * Figures as plain data in Plotly's JSON format (a typed subset): what Plotly renders where it
 * can, and what svg-chart.ts draws as a static SVG everywhere else.
 */
export interface Trace {
  type: "scatter" | "bar";
  name?: string;
  x: number[] | string[];
  y: number[] | string[];
  mode?: "lines" | "markers" | "lines+markers";
  orientation?: "v" | "h";
  /** Bars start here instead of at 0 (timelines). */
  base?: number[];
  line?: { color?: string; dash?: "solid" | "dash" | "dot"; width?: number };
  marker?: { color?: string | string[] };
  yaxis?: "y" | "y2";
  showlegend?: boolean;
  hovertemplate?: string;
  /** A label per bar, drawn inside it (schedule timelines: "F0", "B1"). */
  text?: string[];
  textposition?: "inside" | "none";
}

/** One axis of a figure: title, range, scale. */
export interface Axis {
  title?: { text: string };
  rangemode?: "tozero" | "normal";
  overlaying?: "y";
  side?: "left" | "right";
  type?: "linear" | "category";
  autorange?: boolean | "reversed";
}

/** A figure's title, axes and size, as Plotly takes them. */
export interface Layout {
  title?: { text: string };
  xaxis?: Axis;
  yaxis?: Axis;
  yaxis2?: Axis;
  barmode?: "stack" | "group" | "overlay";
  height?: number;
  width?: number;
  margin?: { l: number; r: number; t: number; b: number };
  /** x and y are fractions of the plot area (legend.ts places it). */
  legend?: {
    orientation?: "h" | "v";
    x?: number;
    xanchor?: "left" | "center" | "right";
    y?: number;
    yanchor?: "top" | "middle" | "bottom";
  };
}

/** A Plotly figure (data and layout): draws itself in a notebook, and as SVG with figureToSvg. */
export interface Figure {
  data: Trace[];
  layout: Layout;
}

/** One palette everywhere: compute, communication, waiting, and series. */
export const COLORS = {
  compute: "#4C78A8",
  comm: "#F58518",
  wait: "#BAB0AC",
  apply: "#72B7B2",
  readback: "#B279A2",
  upload: "#FF9DA6",
  ideal: "#9D9D9D",
  series: ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#B279A2", "#FF9DA6", "#9D755D"],
} as const;
