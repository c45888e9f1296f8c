import assert from "node:assert/strict";
import * as path from "node:path";
import { before, test } from "node:test";
import { inkCoverage } from "../helpers/png";
import { needJupyterAndChromium, OUT, runTutorials, tutorials } from "../helpers/tutorials";
import { withPage } from "../helpers/exported-page";
import { legendOverlaps } from "../helpers/legend-overlaps";

/**
 * The first half of the tutorial notebooks (the rest in notebooks-rest.test.ts), executed
 * headless on the project's tslab kernel (a failing cell is reported with its real error),
 * exported to HTML with meshtrain's template, and the quickstart and the parameter-server
 * notebook opened in headless Chromium to check that their diagrams and plots are really drawn.
 */

before(needJupyterAndChromium);

test("the first tutorials run top to bottom and export to HTML", { timeout: 30 * 60_000 }, () => {
  runTutorials(tutorials("first"));
});

test("the exported quickstart draws its placement diagram and its plots", { timeout: 120_000 }, async () => {
  await withPage(path.join(OUT, "00-quickstart.html"), async (page) => {
    await page.screenshot({ path: path.join(OUT, "00-quickstart.png"), fullPage: true });

    const diagram = page.locator('[data-mime-type="image/svg+xml"] svg').first();
    assert.ok((await diagram.locator("rect").count()) >= 8, "the placement diagram has its boxes and bars");
    assert.ok((await diagram.locator("path").count()) >= 2, "the placement diagram has its ring arrows");
    const d = inkCoverage(await diagram.screenshot());
    assert.ok(d.ink > 0.05 && d.colours > 4, `the placement diagram is drawn (ink ${d.ink.toFixed(3)}, ${d.colours} colours)`);

    const plot = page.locator(".js-plotly-plot").first();
    const lines = await plot.locator(".scatterlayer .trace path").evaluateAll((els) => els.map((e) => e.getAttribute("d") ?? "").filter((s) => s.length > 20).length);
    assert.ok(lines > 0, "the throughput plot has drawn lines");
    const p = inkCoverage(await plot.screenshot());
    assert.ok(p.ink > 0.01 && p.colours > 3, `the throughput plot is drawn (ink ${p.ink.toFixed(3)}, ${p.colours} colours)`);
  });
});

test("the exported data-parallel tutorial's figures keep their legends off their axes' labels", { timeout: 120_000 }, async () => {
  // Plotly's horizontal legend sat over a short figure's tick labels (the timeline's) and axis titles.
  await withPage(path.join(OUT, "01-data-parallel.html"), async (page) => {
    assert.ok((await page.locator(".js-plotly-plot", { hasText: "Timeline of steps" }).count()) > 0, "the timeline is drawn");
    assert.deepEqual(await legendOverlaps(page), []);
  });
});

test("the exported parameter-server notebook draws servers and workers, and stale pushes", { timeout: 120_000 }, async () => {
  await withPage(path.join(OUT, "04-parameter-servers.html"), async (page) => {
    const diagram = page.locator('[data-mime-type="image/svg+xml"] svg').first();
    assert.match((await diagram.textContent()) ?? "", /Parameter servers: 3 worker\(s\), 2 server\(s\), sync/);
    assert.equal(await diagram.locator("text", { hasText: /^server \d$/ }).count(), 2);
    assert.equal(await diagram.locator("text", { hasText: /^rank \d$/ }).count(), 3);
    const d = inkCoverage(await diagram.screenshot());
    assert.ok(d.ink > 0.05 && d.colours > 4, `the placement is drawn (ink ${d.ink.toFixed(3)}, ${d.colours} colours)`);
    // The first staleness histogram: sync's one bar at 0, async's spread over several values.
    const hist = page.locator(".js-plotly-plot", { hasText: "Staleness of pushes" }).first();
    const bars = await hist.locator(".barlayer .point").count();
    assert.ok(bars >= 3, `the staleness histogram has bars beyond staleness 0 (${bars})`);
    const loss = page.locator(".js-plotly-plot", { hasText: "Loss over time" }).first();
    const curves = await loss.locator(".scatterlayer .trace path").evaluateAll((els) => els.map((e) => e.getAttribute("d") ?? "").filter((s) => s.length > 20).length);
    assert.ok(curves >= 4, `the loss curves are drawn (${curves})`);
  });
});
