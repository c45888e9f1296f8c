import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { chromium, type Browser } from "playwright-core";
import { ClassicNotebook, notebookOf, type ShownOutput } from "../helpers/classic-notebook";
import { needNotebookServer, startNotebookServer, type NotebookServer } from "../helpers/notebook-server";
import { isAlive, waitFor } from "../helpers/processes";
import { chromiumPath, ensureDebianPackages } from "../helpers/system-deps";

/**
 * meshtrain in a real Jupyter front end, as a new user meets it: Debian's Jupyter Notebook
 * (the classic one) served on loopback with meshtrain's kernelspec, driven by headless Chromium
 * through its menus, toolbar and dialogs. Run All of the quickstart and of a notebook of one's
 * own (two inputs, validation as model.fit takes it, early stopping), checking in the page that
 * plans, live plots and runs are drawn as pictures, not raw JSON or empty outputs; the stop
 * button mid-fit, then a fit that trains; Kernel > Restart leaving no worker.
 */

const ROOT = path.join(__dirname, "..", "..", "..");

/** A two-input functional model, validated with `[[x1, x2], y]` and stopped early by TF.js's callback. */
const TWO_INPUTS = [
  'import * as tf from "@tensorflow/tfjs";\nimport { cluster, datasets } from "meshtrain";\nconst c = await cluster().workers(2).strategy("data").launch();\nc',
  [
    'const a = tf.input({ shape: [6], name: "a" });',
    'const b = tf.input({ shape: [3], name: "b" });',
    "const joined = tf.layers.concatenate().apply([tf.layers.dense({ units: 8, activation: \"relu\" }).apply(a) as tf.SymbolicTensor, b]) as tf.SymbolicTensor;",
    "const model = tf.model({ inputs: [a, b], outputs: tf.layers.dense({ units: 1 }).apply(joined) as tf.SymbolicTensor });",
    'const [x1, x2, v1, v2] = [[256, 6], [256, 3], [64, 6], [64, 3]].map(([n, d], i) => tf.randomNormal([n!, d!], 0, 1, "float32", i + 1));',
    "const y = tf.tidy(() => x1!.sum(1, true).add(x2!.sum(1, true)));",
    "const vy = tf.tidy(() => v1!.sum(1, true).add(v2!.sum(1, true)));",
    "c.plan(model, { batchSize: 32 })",
  ].join("\n"),
  [
    "const run = await c.fit(model, datasets.fromTensors([x1!, x2!], y), {",
    '  epochs: 10, batchSize: 32, loss: "meanSquaredError", optimizer: { name: "sgd", learningRate: 0.01 }, seed: 1,',
    "  validationData: [[v1!, v2!], vy],",
    // Any change in val_loss is less than minDelta: the second epoch ends the fit.
    '  callbacks: tf.callbacks.earlyStopping({ monitor: "val_loss", patience: 0, minDelta: 1e6 }),',
    "});",
  ].join("\n"),
  "run",
  "run.throughput()",
  "run.timeline({ from: 2, to: 5 })",
  "await c.close();",
];

/** A fit long enough to stop, its workers' pids printed first, and a short fit for after the stop. */
const STOP_AND_RESTART = [
  [
    'import * as tf from "@tensorflow/tfjs";',
    'import { cluster, datasets } from "meshtrain";',
    'const c = await cluster().workers(2).strategy("data").launch();',
    "const model = tf.sequential({ layers: [tf.layers.dense({ inputShape: [4], units: 8, activation: \"relu\" }), tf.layers.dense({ units: 1 })] });",
    'const data = datasets.fromTensors(tf.randomNormal([256, 4], 0, 1, "float32", 1), tf.randomNormal([256, 1], 0, 1, "float32", 2));',
    'const options = { batchSize: 16, loss: "meanSquaredError", optimizer: "sgd" } as const;',
    'console.log("worker pids: " + JSON.stringify(c.workers.map((w) => w.info.pid)));',
  ].join("\n"),
  "await c.fit(model, data, { ...options, epochs: 500 });",
  "await c.fit(model, data, { ...options, epochs: 1 });",
];

let server: NotebookServer;
let browser: Browser;

before(async () => {
  needNotebookServer();
  ensureDebianPackages("Chromium", ["chromium"], () => chromiumPath() !== null);
  server = await startNotebookServer({
    "00-quickstart.ipynb": fs.readFileSync(path.join(ROOT, "notebooks", "00-quickstart.ipynb"), "utf8"),
    "two-inputs.ipynb": notebookOf(TWO_INPUTS),
    "stop-and-restart.ipynb": notebookOf(STOP_AND_RESTART),
  });
  browser = await chromium.launch({ executablePath: chromiumPath()!, args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"] });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const drawn = (o: ShownOutput): boolean => o.svgs > 0;
const text = (cell: readonly ShownOutput[]): string => cell.map((o) => o.text).join("\n");

/** Nothing a user should not see: an error, raw JSON, a MIME type's name, or an empty output under a drawing. */
function clean(cells: readonly ShownOutput[][], what: string): void {
  cells.forEach((cell, i) => {
    for (const o of cell) {
      assert.ok(!/output_error/.test(o.kind), `${what}, cell ${i}: an error: ${o.text}`);
      assert.doesNotMatch(o.text, /^\s*[{[]\s*"|application\/vnd/, `${what}, cell ${i}: raw JSON shown`);
      assert.ok(!(/output_stdout/.test(o.kind) && o.text.trim() === ""), `${what}, cell ${i}: an empty stdout output`);
    }
  });
}

test("Run All of the quickstart draws its cluster, plan, live plot and run in the page", { timeout: 5 * 60_000 }, async () => {
  const nb = await ClassicNotebook.open(browser, server, "00-quickstart.ipynb");
  await nb.runAll(4 * 60_000);
  const cells = (await nb.outputs()).filter((c) => c.length > 0);
  clean(cells, "quickstart");
  const all = cells.flat();
  assert.ok(all.some((o) => /output_html/.test(o.kind) && /meshtrain cluster: 2 worker\(s\), strategy "data", ready/.test(o.text)), "the cluster's table");
  assert.ok(all.some((o) => /output_svg/.test(o.kind) && drawn(o) && /Data parallelism: 2 worker\(s\), 2 replica\(s\)/.test(o.text)), "the plan's placement diagram");
  assert.ok(all.some((o) => drawn(o) && /^done: 125\/125 steps on 2 worker\(s\)/.test(o.text)), "the live plot, ended");
  assert.ok(all.some((o) => drawn(o) && /Step time per rank/.test(o.text)), "the run's breakdown figure");
  assert.ok(all.some((o) => /held-out accuracy: \d+\.\d%/.test(o.text)), "the accuracy");
  await nb.close();
});

test("Run All of a two-input notebook of one's own: validation as model.fit takes it, early stopping said, figures drawn", { timeout: 5 * 60_000 }, async () => {
  const nb = await ClassicNotebook.open(browser, server, "two-inputs.ipynb");
  await nb.runAll(4 * 60_000);
  const cells = await nb.outputs();
  clean(cells, "two inputs");
  assert.ok(cells[1]!.some((o) => drawn(o) && /Data parallelism: 2 worker\(s\)/.test(o.text)), `the plan: ${text(cells[1]!)}`);
  // Early stopping ended it after the second of ten epochs, and the live plot and the summary say so.
  assert.ok(cells[2]!.some((o) => drawn(o) && /^ended by a callback \(model\.stopTraining\): 16\/80 steps/.test(o.text)), `the live plot: ${text(cells[2]!)}`);
  assert.match(text(cells[3]!), /16 steps over 2 of 10 epoch\(s\)[\s\S]*ended by a callback/);
  assert.ok(cells[4]!.some((o) => drawn(o) && /Throughput per step/.test(o.text)), `throughput(): ${text(cells[4]!)}`);
  assert.ok(cells[5]!.some((o) => drawn(o) && /Timeline of steps 2-4/.test(o.text)), `timeline(): ${text(cells[5]!)}`);
  await nb.close();
});

test("the stop button ends a fit mid-way and the next fit trains; Kernel > Restart leaves no worker", { timeout: 5 * 60_000 }, async () => {
  const nb = await ClassicNotebook.open(browser, server, "stop-and-restart.ipynb");
  await nb.run(0);
  await nb.ran(0, 90_000);
  const [launch] = await nb.outputs();
  const pids = JSON.parse(/worker pids: (\[[\d,]+\])/.exec(text(launch!))?.[1] ?? "[]") as number[];
  assert.equal(pids.length, 2, text(launch!));

  await nb.run(1);
  await nb.shows(1, /^training: step \d+\/8000/, 90_000);
  await nb.stop();
  // The cell ends at once; the fit, after the step in flight, and then its plot says how it ended.
  await nb.ran(1, 30_000);
  await nb.shows(1, /^stopped: fit interrupted/, 30_000);
  const stopped = (await nb.outputs())[1]!;
  assert.ok(stopped.some((o) => /output_error/.test(o.kind) && /Interrupted: the cell was interrupted; the kernel, its variables and its clusters stay/.test(o.text)), `the stopped cell's error: ${text(stopped)}`);
  const live = stopped.find((o) => drawn(o))!;
  const steps = Number(/(\d+)\/8000\s*steps/.exec(live.text)?.[1]);
  assert.ok(steps > 0 && steps < 8000, `stopped mid-fit: ${live.text}`);

  await nb.run(2);
  await nb.ran(2, 120_000);
  const next = (await nb.outputs())[2]!;
  assert.ok(next.some((o) => drawn(o) && /^done: 16\/16 steps on 2 worker\(s\)/.test(o.text)), `the next fit: ${text(next)}`);
  assert.deepEqual(pids.map(isAlive), [true, true], "the workers stayed through the stop");

  await nb.restart();
  await waitFor(`workers ${pids.join(", ")} to exit after the restart`, () => !pids.some(isAlive), 30_000);
  await nb.close();
});
