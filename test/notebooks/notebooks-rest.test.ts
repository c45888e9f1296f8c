import assert from "node:assert/strict";
import * as fs from "node:fs";
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

test("the pipeline notebook's stage killed at step 13 heals onto the spare from step 12 and ends at the uncrashed fit's loss", () => {
  type Output = { output_type: string; data?: Record<string, string | string[]> };
  const nb = JSON.parse(fs.readFileSync(path.join(OUT, "06-pipeline.ipynb"), "utf8")) as { cells: Array<{ outputs?: Output[] }> };
  const texts = nb.cells.flatMap((c) => c.outputs ?? []).map((o) => [o.data?.["text/markdown"] ?? ""].flat().join(""));
  const healed = texts.find((t) => t.includes("| change | rank | training went on from step |"));
  assert.ok(healed, "the healing cell showed its table");
  assert.match(healed, /\| left \| 1 \| 12 \| worker rank 1 .* exited \(killed by SIGKILL\)/);
  assert.match(healed, /\| joined \| 1 \| 12 \| a spare, idle until now \|/);
  const [, withCrash, without] = /loss: ([\d.]+) with the crash, ([\d.]+) without it/.exec(healed) ?? [];
  assert.ok(withCrash && Math.abs(Number(withCrash) - Number(without)) <= 1e-4 * Math.abs(Number(without)), healed);
});
