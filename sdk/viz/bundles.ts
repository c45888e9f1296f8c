import type { Figure } from "./figure";
import { displayableFigure, type MimeBundle } from "./displayable";
import { figureToSvg } from "./svg-chart";
import type { Plan } from "../plan/plans";

export const PLOTLY_MIME = "application/vnd.plotly.v1+json";

/**
 * A figure as one display: Plotly's MIME type for renderers that have Plotly (JupyterLab with
 * its Plotly extension, VS Code, meshtrain's HTML export), a static SVG drawing as text/html for
 * everything else, and its title as text.
 */
export function figureBundle(fig: Figure): MimeBundle {
  return {
    [PLOTLY_MIME]: fig,
    "text/html": `<div class="meshtrain-figure">${figureToSvg(fig)}</div>`,
    "text/plain": fig.layout.title?.text ?? "figure",
  };
}

/** A plan as one display: its placement diagram, and its text. */
export function planBundle(plan: Pick<Plan, "draw" | "toString">): MimeBundle {
  return { "image/svg+xml": plan.draw(), "text/plain": plan.toString() };
}

/** A figure that draws itself where it is shown (a notebook's cell), as its SVG bundle. */
export function shown(fig: Figure): Figure {
  return displayableFigure(fig, figureBundle);
}
