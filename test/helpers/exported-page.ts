import assert from "node:assert/strict";
import * as fs from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";
import { chromiumPath } from "./system-deps";

/** Opens an exported notebook in headless Chromium, once its Plotly figures are drawn. */
export async function withPage(html: string, use: (page: Page) => Promise<void>): Promise<void> {
  assert.ok(fs.existsSync(html), "run the first test first");
  const browser: Browser = await chromium.launch({
    executablePath: chromiumPath()!,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    await page.goto(`file://${html}`);
    await page.waitForSelector(".js-plotly-plot .main-svg", { timeout: 30_000 });
    await use(page);
  } finally {
    await browser.close();
  }
}
