import { esc } from "./escape";
import type { Figure } from "./figure";

export interface ReportPart {
  title: string;
  /** Trusted markup made by meshtrain (an SVG diagram or a table). */
  html?: string;
  figure?: Figure;
}

/**
 * One standalone HTML page: plotly.js inlined once, then every part in order; figures are drawn
 * by Plotly from their JSON. Opens from disk, no network.
 */
export function reportHtml(title: string, parts: readonly ReportPart[], plotlyJs: string): string {
  const body = parts
    .map((p, i) => {
      const inner = p.figure
        ? `<div class="figure" id="figure-${i}"></div><script type="application/json" id="figure-${i}-data">${JSON.stringify(p.figure).replace(/</g, "\\u003c")}</script>`
        : (p.html ?? "");
      return `<section><h2>${esc(p.title)}</h2>${inner}</section>`;
    })
    .join("\n");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font-family:sans-serif;max-width:980px;margin:24px auto;color:#222}h1{font-size:22px}h2{font-size:16px;margin-top:28px}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f3f3f3}.figure{width:100%;min-height:300px}</style>
<script>${plotlyJs}</script>
</head><body><h1>${esc(title)}</h1>
${body}
<script>
for (const el of document.querySelectorAll(".figure")) {
  const fig = JSON.parse(document.getElementById(el.id + "-data").textContent);
  Plotly.newPlot(el, fig.data, fig.layout, { responsive: true, displaylogo: false });
}
</script>
</body></html>
`;
}

/** Where plotly.js lives: resolved from this project's dependencies (plotly.js-dist-min). */
export function plotlyPath(): string {
  return require.resolve("plotly.js-dist-min/plotly.min.js");
}
