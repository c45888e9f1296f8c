import type { PlanData } from "../strategies/registry";
import { formatDataPlan } from "../strategies/data/planner";
import { formatPipelinePlan } from "../strategies/pipeline/planner";
import { formatPsPlan } from "../strategies/ps/planner";
import type { Figure } from "./figure";
import type { MimeBundle } from "./displayable";
import { placementSvg } from "./placement";
import { figureToSvg } from "./svg-chart";

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

export function planBundle(plan: PlanData): MimeBundle {
  return { "image/svg+xml": placementSvg(plan), "text/plain": plan.strategy === "data" ? formatDataPlan(plan) : plan.strategy === "ps" ? formatPsPlan(plan) : formatPipelinePlan(plan) };
}
