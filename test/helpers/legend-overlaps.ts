import type { Page } from "playwright-core";

type Box = { x: number; y: number; width: number; height: number };
const meets = (a: Box, b: Box): boolean =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;

/**
 * Where a drawn Plotly figure's legend covers its x tick labels or x-axis title, one line each
 * ("TITLE: legend over TEXT"), measured on the page as Chromium laid it out.
 */
export async function legendOverlaps(page: Page): Promise<string[]> {
  const hits: string[] = [];
  for (const plot of await page.locator(".js-plotly-plot").all()) {
    const legend = plot.locator(".legend .bg");
    if ((await legend.count()) === 0) continue;
    const box = await legend.first().boundingBox();
    if (!box) continue;
    const title = (await plot.locator(".gtitle").first().textContent()) ?? "a figure";
    for (const label of await plot.locator(".xtick text, .g-xtitle text").all()) {
      const r = await label.boundingBox();
      if (r && r.width > 0 && meets(box, r)) hits.push(`${title}: legend over "${(await label.textContent()) ?? ""}"`);
    }
  }
  return hits;
}
