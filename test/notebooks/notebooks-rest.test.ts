import assert from "node:assert/strict";
import * as path from "node:path";
import { before, test } from "node:test";
import { inkCoverage } from "../helpers/png";
import { needJupyterAndChromium, OUT, runTutorials, tutorials } from "../helpers/tutorials";
import { withPage } from "../helpers/exported-page";

/**
 * The second half of the tutorial notebooks (the first in notebooks.test.ts): executed and
 * exported as those are, and the hybrid notebook opened in headless Chromium to check that its
 * placement and measured schedule are really drawn.
 */

before(needJupyterAndChromium);

test("the other tutorials run top to bottom and export to HTML", { timeout: 30 * 60_000 }, () => {
  runTutorials(tutorials("rest"));
});

test("the exported hybrid notebook draws the 2 x 2 placement and the measured schedule", { timeout: 120_000 }, async () => {
  await withPage(path.join(OUT, "07-hybrid-and-auto.html"), async (page) => {
    const diagram = page.locator('[data-mime-type="image/svg+xml"] svg').first();
    assert.match((await diagram.textContent()) ?? "", /Hybrid parallelism: 2 replica\(s\) x 2 stage\(s\)/);
    assert.equal(await diagram.locator("text", { hasText: /^all-reduce$/ }).count(), 2, "one all-reduce link per stage");
    const d = inkCoverage(await diagram.screenshot());
    assert.ok(d.ink > 0.05 && d.colours > 4, `the placement is drawn (ink ${d.ink.toFixed(3)}, ${d.colours} colours)`);
    const schedule = page.locator(".js-plotly-plot", { hasText: "as measured" }).first();
    const bars = await schedule.locator(".barlayer .point").count();
    assert.ok(bars >= 16, `the measured schedule has a bar per forward and backward (${bars})`);
  });
});
