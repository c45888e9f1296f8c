import assert from "node:assert/strict";
import * as path from "node:path";
import { afterEach, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type Cluster, type Dataset, type LogLine } from "../../sdk/index";
import { WorkerLostError } from "../../sdk/errors/errors";
import { Chatty, Doomed } from "../helpers/chatty-layers";
import { captureOutput, type CapturedOutput } from "../helpers/captured-output";
import { isAlive, startCliWorker, waitFor, type CliWorker } from "../helpers/processes";

/**
 * What workers print reaches the driver: local workers through their pipes, workers started
 * elsewhere as messages. Each line is shown with its rank as prefix ([rank 1] ...), stdout on
 * stdout and stderr on stderr, limited per worker with the rest counted, and kept in run.logs.
 * A worker that dies is shown dying, not only "lost".
 */

tf.enableProdMode();
const CHATTY = path.join(__dirname, "..", "helpers", "chatty-layers.js");
const TOKEN = "worker-output-test-token-0123456789";

function chattyModel(): tf.LayersModel {
  return tf.sequential({ layers: [tf.layers.dense({ units: 3, inputShape: [2] }), new Chatty({}), tf.layers.dense({ units: 1 })] });
}

function doomedModel(how: "exit" | "throw"): tf.LayersModel {
  return tf.sequential({ layers: [tf.layers.dense({ units: 3, inputShape: [2] }), new Doomed({ at: 3, how }), tf.layers.dense({ units: 1 })] });
}

function data(n: number): Dataset {
  const x = tf.randomUniform([n, 2], -1, 1, "float32", 3);
  return datasets.fromTensors(x, tf.sum(x, 1, true), "sums");
}

const FIT = { batchSize: 8, shuffle: false, loss: "meanSquaredError", optimizer: "sgd" } as const;

/** The lines shown for `rank` on `stream`, without their prefix. */
function shown(out: CapturedOutput, stream: "stdout" | "stderr", rank: number): string[] {
  const prefix = `[rank ${rank}] `;
  return out.lines(stream).filter((l) => l.startsWith(prefix)).map((l) => l.slice(prefix.length));
}

function logged(logs: readonly LogLine[], rank: number, stream: "stdout" | "stderr"): string[] {
  return logs.filter((l) => l.from === `rank ${rank}` && l.stream === stream).map((l) => l.text);
}

/** Calls 1..n in order, and a warning for every third: what one worker's Chatty layer printed. */
function checkChatty(stdout: string[], stderr: string[]): number {
  const n = stdout.length;
  assert.ok(n > 0, "no chatty line");
  assert.deepEqual(stdout, Array.from({ length: n }, (_, i) => `chatty call ${i + 1}`));
  assert.deepEqual(stderr.filter((l) => l.startsWith("chatty")), Array.from({ length: Math.floor(n / 3) }, (_, i) => `chatty warning ${3 * (i + 1)}`));
  return n;
}

describe("worker output", () => {
  let c: Cluster | undefined;
  let out: CapturedOutput | undefined;
  const cliWorkers: CliWorker[] = [];
  afterEach(async () => {
    out?.restore();
    out = undefined;
    await c?.close();
    c = undefined;
    await Promise.all(cliWorkers.splice(0).map((w) => w.stop()));
    delete process.env.MESHTRAIN_TEST_DOOMED;
  });

  test("local workers: every line is kept in run.logs with its rank and stream; the lines shown are limited per worker and the rest counted", async () => {
    c = await cluster().workers(2).strategy("data").backend("cpu").modules([CHATTY]).workerOutput("all", { linesPerSecond: 1 }).launch();
    const o = captureOutput();
    out = o;
    // 40 steps print over 50 lines per worker; a burst of 5 and 1 a second show them all only if the fit takes 45 s.
    const run = await c.fit(chattyModel(), data(320), { ...FIT, epochs: 1 });
    o.restore();
    for (const rank of [0, 1]) {
      const stdout = logged(run.logs, rank, "stdout");
      const stderr = logged(run.logs, rank, "stderr");
      const calls = checkChatty(stdout, stderr);
      assert.ok(calls >= 40, `rank ${rank}: ${calls} calls for 40 steps`);
      const seen: string[] = [...shown(o, "stdout", rank), ...shown(o, "stderr", rank)];
      const summaries = seen.filter((l) => /^\(\d+ lines? not shown: more than 1 a second; run\.logs has them\)$/.test(l));
      const held = summaries.reduce((sum, l) => sum + Number(/\d+/.exec(l)![0]), 0);
      assert.ok(held > 0, `rank ${rank}: nothing was held back: ${seen.length} lines shown`);
      assert.equal(seen.length - summaries.length + held, stdout.length + stderr.length, `rank ${rank}: shown + held = printed`);
      // What is shown comes in the order printed, each line on the stream it was printed on. Not
      // always the first lines alone: a fit that outlasts the burst shows one more a second.
      const shownOut = shown(o, "stdout", rank);
      let at = 0;
      for (const line of shownOut) {
        const found = stdout.indexOf(line, at);
        assert.ok(found >= 0, `rank ${rank}: "${line}" was shown out of the order printed (shown: ${JSON.stringify(shownOut)})`);
        at = found + 1;
      }
    }
    assert.deepEqual(c.logs.slice(-run.logs.length), run.logs);
  });

  test('level "warnings" shows only the workers\' stderr, and "none" nothing; run.logs keeps every line either way', async () => {
    for (const level of ["warnings", "none"] as const) {
      c = await cluster().workers(2).strategy("data").backend("cpu").modules([CHATTY]).workerOutput(level).launch();
      const o = captureOutput();
      out = o;
      const run = await c.fit(chattyModel(), data(48), { ...FIT, epochs: 1 });
      o.restore();
      for (const rank of [0, 1]) {
        checkChatty(logged(run.logs, rank, "stdout"), logged(run.logs, rank, "stderr"));
        assert.deepEqual(shown(o, "stdout", rank), [], `${level}: rank ${rank}'s stdout was shown`);
        const warnings: string[] = shown(o, "stderr", rank).filter((l) => l.startsWith("chatty"));
        assert.deepEqual(warnings, level === "none" ? [] : logged(run.logs, rank, "stderr").filter((l) => l.startsWith("chatty")));
      }
      await c.close();
      c = undefined;
    }
  });

  test("workers started elsewhere send their lines to the driver, and still print them on their own terminal", async () => {
    cliWorkers.push(...(await Promise.all([0, 1].map(() => startCliWorker(TOKEN, ["--module", CHATTY])))));
    c = await cluster().connect(cliWorkers.map((w) => w.url)).token(TOKEN).strategy("data").backend("cpu").launch();
    const o = captureOutput();
    out = o;
    await c.fit(chattyModel(), data(48), { ...FIT, epochs: 1 });
    // Lines travel in batches every 100 ms: the last ones may come just after the fit.
    const cl = c;
    await waitFor("a line per step from each worker", () => [0, 1].every((r) => logged(cl.logs, r, "stdout").length >= 6), 5000);
    o.restore();
    for (const rank of [0, 1]) {
      const calls = checkChatty(logged(cl.logs, rank, "stdout"), logged(cl.logs, rank, "stderr"));
      assert.deepEqual(shown(o, "stdout", rank), logged(cl.logs, rank, "stdout"));
      await waitFor(`rank ${rank}'s own terminal`, () => cliWorkers[rank]!.output().includes(`chatty call ${calls}\n`), 5000);
    }
  });

  test("a local worker that exits is shown dying: its last words with its rank, and in the error", async () => {
    process.env.MESHTRAIN_TEST_DOOMED = "1";
    c = await cluster().workers(2).strategy("data").backend("cpu").modules([CHATTY]).launch();
    const pids = c.workers.map((w) => w.info.pid);
    const o = captureOutput();
    out = o;
    const err = await c.fit(doomedModel("exit"), data(48), { ...FIT, epochs: 1 }).then(() => assert.fail("fit resolved"), (e: unknown) => e);
    await waitFor("the workers to exit", () => pids.every((p) => !isAlive(p)), 10_000);
    o.restore();
    assert.ok(err instanceof WorkerLostError, String(err));
    assert.match(err.message, /exited \(exit code 3\)/);
    assert.match(err.message, /doomed: giving up at call 3/);
    const rank = err.details.rank!;
    assert.ok(shown(o, "stderr", rank).includes("doomed: giving up at call 3"), o.lines("stderr").join("\n"));
  });

  test("a worker started elsewhere that crashes (an uncaught exception) sends its stack before it exits", async () => {
    cliWorkers.push(await startCliWorker(TOKEN, ["--module", CHATTY]));
    process.env.MESHTRAIN_TEST_DOOMED = "1";
    cliWorkers.push(await startCliWorker(TOKEN, ["--module", CHATTY]));
    delete process.env.MESHTRAIN_TEST_DOOMED;
    c = await cluster().connect(cliWorkers.map((w) => w.url)).token(TOKEN).strategy("data").backend("cpu").launch();
    const o = captureOutput();
    out = o;
    const err = await c.fit(doomedModel("throw"), data(48), { ...FIT, epochs: 1 }).then(() => assert.fail("fit resolved"), (e: unknown) => e);
    o.restore();
    assert.ok(err instanceof WorkerLostError, String(err));
    assert.equal(err.details.rank, 1);
    assert.match(err.message, /crashed: Error: doomed: an uncaught failure at call 3/);
    assert.ok(shown(o, "stderr", 1).some((l) => /crashed: Error: doomed: an uncaught failure at call 3/.test(l)), o.lines("stderr").join("\n"));
    await waitFor("the crashed worker to exit", () => cliWorkers[1]!.child.exitCode !== null, 5000);
    assert.equal(cliWorkers[1]!.child.exitCode, 70);
  });
});
