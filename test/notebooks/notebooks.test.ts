import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { before, test } from "node:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { inkCoverage } from "../helpers/png";
import { chromiumPath, ensureDebianPackages, jupyterReady, PYTHON } from "../helpers/system-deps";

/**
 * Every tutorial notebook, executed headless on the project's tslab kernel (a failing cell is
 * reported with its real error), exported to HTML with meshtrain's template, and the quickstart
 * opened in headless Chromium to check that its placement diagram and a plot are really drawn (and
 * the same for the parameter-server and hybrid notebooks).
 */

const ROOT = path.join(__dirname, "..", "..", "..");
const NOTEBOOKS = path.join(ROOT, "notebooks");
const OUT = path.join(NOTEBOOKS, "out");

before(() => {
  ensureDebianPackages("Jupyter (nbclient, nbconvert)", ["jupyter-client", "jupyter-nbconvert", "python3-nbclient", "python3-ipykernel"], jupyterReady);
  ensureDebianPackages("Chromium", ["chromium"], () => chromiumPath() !== null);
});

/** Opens an exported notebook in headless Chromium, once its Plotly figures are drawn. */
async function withPage(html: string, use: (page: Page) => Promise<void>): Promise<void> {
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

test("every notebook runs top to bottom and exports to HTML", { timeout: 30 * 60_000 }, () => {
  const notebooks = fs.readdirSync(NOTEBOOKS).filter((f) => /^\d\d-.*\.ipynb$/.test(f)).sort();
  assert.ok(notebooks.length >= 4, `found ${notebooks.join(", ")}`);
  const r = spawnSync(
    PYTHON,
    [path.join(ROOT, "scripts", "notebooks.py"), "--out", OUT, "--plotly", require.resolve("plotly.js-dist-min/plotly.min.js"), "--timeout", "600", ...notebooks.map((n) => path.join(NOTEBOOKS, n))],
    { encoding: "utf8", env: { ...process.env, JUPYTER_PATH: path.join(ROOT, "jupyter") }, timeout: 29 * 60_000 },
  );
  process.stdout.write(r.stdout);
  assert.equal(r.status, 0, `notebooks failed:\n${r.stdout}\n${r.stderr}`);
  for (const n of notebooks) {
    const executed = JSON.parse(fs.readFileSync(path.join(OUT, n), "utf8")) as { cells: Array<{ cell_type: string; outputs?: Array<{ output_type: string; name?: string }> }> };
    const code = executed.cells.filter((c) => c.cell_type === "code");
    assert.ok(code.every((c) => !(c.outputs ?? []).some((o) => o.output_type === "error")), `${n} has an error output`);
    assert.ok(fs.statSync(path.join(OUT, n.replace(/\.ipynb$/, ".html"))).size > 100_000, `${n} was exported`);
  }
});

test("the exported quickstart draws its placement diagram and its plots", { timeout: 120_000 }, async () => {
  const html = path.join(OUT, "00-quickstart.html");
  assert.ok(fs.existsSync(html), "run the previous test first");
  let browser: Browser | undefined;
  try {
    browser = await chromium.launch({
      executablePath: chromiumPath()!,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
    });
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    await page.goto(`file://${html}`);
    await page.waitForSelector(".js-plotly-plot .main-svg", { timeout: 30_000 });
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
  } finally {
    await browser?.close();
  }
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
