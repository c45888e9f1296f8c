import assert from "node:assert/strict";
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { before, test } from "node:test";
import { chromium } from "playwright-core";
import { blocksRun } from "../helpers/readme";
import { chromiumPath, ensureDebianPackages, jupyterReady } from "../helpers/system-deps";

/**
 * meshtrain as a user installs it: `npm pack`'s tarball installed into an empty folder by the
 * README's commands as written (install, approve and rebuild the native kernels, register the
 * kernel, export a notebook), and a notebook in that folder and one in a
 * folder with no node_modules each executed and exported with `meshtrain export --execute`: both
 * import meshtrain and train; the failing cell (tagged raises-exception) shows its type, message
 * and hint and the cell after it runs; no TF.js banner; and the HTML, opened in Chromium, draws
 * the placement diagram and the Plotly figures with nothing imported from meshtrain/notebook.
 */

const ROOT = path.join(__dirname, "..", "..", "..");

before(() => {
  ensureDebianPackages("Jupyter (nbclient, nbconvert)", ["jupyter-client", "jupyter-nbconvert", "python3-nbclient", "python3-ipykernel"], jupyterReady);
  ensureDebianPackages("Chromium", ["chromium"], () => chromiumPath() !== null);
});

function run(cmd: string, args: string[], o: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { cwd: o.cwd, env: { ...process.env, ...o.env }, encoding: "utf8", timeout: o.timeoutMs });
  assert.equal(r.status, 0, `${cmd} ${args.join(" ")} in ${o.cwd} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return r;
}

/** Nothing imported from meshtrain/notebook: meshtrain's kernel draws by itself. The failing cell is tagged, and the close cell runs right after it. */
const CELLS: Array<{ source: string; tags?: string[] }> = [
  { source: 'import * as tf from "@tensorflow/tfjs";\nimport { cluster, datasets } from "meshtrain";\nconst c = await cluster().workers(2).strategy("data").launch();\nc' },
  { source: 'const model = tf.sequential({ layers: [tf.layers.dense({ units: 16, inputShape: [6], activation: "relu" }), tf.layers.dense({ units: 3, activation: "softmax" })] });\nc.plan(model, { batchSize: 32 })' },
  { source: "const run = await c.fit(model, datasets.synthetic({ inputShape: [6], classes: 3, size: 512, seed: 1 }), { epochs: 2, batchSize: 32 });\nrun" },
  { source: "run.throughput()" },
  { source: 'await cluster().workers(2).strategy("pipeline", { stages: 5 }).launch();', tags: ["raises-exception"] },
  { source: "await c.close();\nconsole.log(`trained ${run.history.length} steps`);" },
];

function notebook(): string {
  const cells = CELLS.map(({ source, tags }) => ({ cell_type: "code", execution_count: null, metadata: tags ? { tags } : {}, outputs: [], source }));
  return JSON.stringify({ cells, metadata: {}, nbformat: 4, nbformat_minor: 5 }, null, 1);
}

test("installed from its tarball into an empty folder, the kernel runs notebooks in any folder and the export draws their figures", { timeout: 15 * 60_000 }, async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-anywhere-"));
  try {
    // The tarball of what is built now (npm test builds first), as `npm publish` would send it.
    const packed = run("npm", ["pack", "--ignore-scripts", "--pack-destination", tmp], { cwd: ROOT, timeoutMs: 120_000 }).stdout.trim().split("\n").pop()!;
    const project = path.join(tmp, "project");
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "anywhere", private: true }));
    fs.writeFileSync(path.join(project, "train.ipynb"), notebook());
    // The README's commands as written, with this tarball's path for its placeholder.
    const readme = blocksRun("tarball");
    assert.equal(readme.length, 1);
    const placeholder = /\/path\/to\/(meshtrain-[\d.]+\.tgz)/.exec(readme[0]!.code)!;
    assert.equal(placeholder[1], packed, "the README names the tarball npm pack makes");
    const env = { JUPYTER_DATA_DIR: path.join(tmp, "jupyter") };
    const commands = readme[0]!.code.replace(placeholder[0], path.join(tmp, packed));
    run("sh", ["-ec", commands], { cwd: project, env, timeoutMs: 12 * 60_000 });
    checkExport(project);
    await checkDrawn(path.join(project, "train.html"));
    const status = JSON.parse(fs.readFileSync(path.join(project, "node_modules", "meshtrain", "native", "build", "status.json"), "utf8")) as { ok: boolean; reason?: string };
    assert.ok(status.ok, `the README's rebuild built the native kernels: ${status.reason}`);
    const bin = path.join(project, "node_modules", ".bin", "meshtrain");
    const spec = JSON.parse(fs.readFileSync(path.join(tmp, "jupyter", "kernels", "meshtrain-tslab", "kernel.json"), "utf8")) as { argv: string[]; interrupt_mode: string };
    assert.equal(spec.argv[1], fs.realpathSync(path.join(project, "node_modules", "meshtrain", "dist", "kernel-ext", "kernel-main.js")));
    assert.ok(path.isAbsolute(spec.argv[0]!) && fs.existsSync(spec.argv[0]!), `node at ${spec.argv[0]}`);
    assert.equal(spec.interrupt_mode, "signal");

    const elsewhere = path.join(tmp, "elsewhere", "notes");
    fs.mkdirSync(elsewhere, { recursive: true });
    fs.writeFileSync(path.join(elsewhere, "train.ipynb"), notebook());
    run(bin, ["export", "train.ipynb", "--execute", "--timeout", "300"], { cwd: elsewhere, env, timeoutMs: 6 * 60_000 });
    checkExport(elsewhere);
    await checkDrawn(path.join(elsewhere, "train.html"));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

/** The executed notebook trained, ran on past its failing cell (tagged raises-exception) to close the cluster, showed that cell's error with its hint (no raw dump), and no banner. */
function checkExport(dir: string): void {
  const html = fs.readFileSync(path.join(dir, "train.html"), "utf8");
  assert.match(html, /trained 32 steps/, `${dir}: the cells ran, the one after the failing cell included`);
  assert.match(html, /ConfigError.*\[MT_ERR_CONFIG\]: pipeline: stages\(5\) != workers\(2\): each stage runs on its own worker/, `${dir}: the failing cell's error output`);
  assert.match(html, /help: use 2 stages/, `${dir}: the error's hint is in the page`);
  assert.doesNotMatch(html, /code: &#39;MT_ERR|code: 'MT_ERR/, `${dir}: a raw error dump`);
  assert.doesNotMatch(html, /Hi, looks like you are running TensorFlow\.js/, `${dir}: TF.js's banner`);
}

/** In Chromium: the placement diagram has its shapes, and every Plotly output was drawn. */
async function checkDrawn(html: string): Promise<void> {
  const browser = await chromium.launch({ executablePath: chromiumPath()!, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
  try {
    const page = await browser.newPage();
    await page.goto(`file://${html}`);
    await page.waitForSelector(".meshtrain-plotly .main-svg", { timeout: 30_000 });
    const plotly = await page.$$eval(".meshtrain-plotly", (els) => els.map((el) => el.querySelectorAll(".main-svg").length > 0));
    assert.ok(plotly.length >= 2 && plotly.every(Boolean), `Plotly outputs drawn: ${JSON.stringify(plotly)}`);
    const shapes = await page.$$eval(".jp-RenderedSVG svg", (els) => els.map((el) => el.querySelectorAll("rect, path, line, text").length));
    assert.ok(shapes.length >= 1 && shapes.every((n) => n > 10), `placement diagram shapes: ${JSON.stringify(shapes)}`);
  } finally {
    await browser.close();
  }
}
