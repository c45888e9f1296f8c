import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type Cluster, type WorkerInfo } from "../../sdk/index";
import { WORKER_PAGE_CSP } from "../../sdk/cluster/worker-page";
import { differenceFromModelFit } from "../helpers/fit-check";
import { startJoiner } from "../helpers/joining";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";
import { freePort, startCliWorker, waitFor } from "../helpers/processes";
import { modelFitReference } from "../helpers/reference";
import { field, openTab, startBrowser, withBackend } from "../helpers/tabs";
import { LearnedScale } from "../helpers/custom-layers";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/**
 * Browser tabs as workers, in real headless Chromium (WebGPU on its software adapter) opening
 * the driver's invite link: the page is the SDK's own worker code, its connections go through
 * the driver's relay, and what it trains is compared with model.fit.
 */

tf.enableProdMode();
const TOKEN = "tabs-test-token-0123456789abcdef";

/** A join that takes browser tabs; resolves once the invite link is known (launch() goes on waiting). */
async function tabCluster(workers: number, strategy: (b: ReturnType<typeof cluster>) => ReturnType<typeof cluster>) {
  const port = await freePort();
  let invite: string | undefined;
  const b = cluster()
    .join({ workers, port, timeoutMs: 90_000, browsers: true, onInvite: (url) => (invite = url) })
    .token(TOKEN)
    // Ten seconds: on a swamped machine a headless tab's threads stood still for 3.4 s, and its
    // ring neighbour took it for gone. Tabs here leave by Leave or by closing, never by silence.
    .heartbeat({ intervalMs: 200, timeoutMs: 10_000 })
    .timeouts({ stepMs: 60_000 });
  const launching = strategy(b).launch();
  launching.catch(() => undefined);
  await waitFor("the invite link", () => invite !== undefined, 10_000);
  return { launching, invite: invite!, port };
}

describe("browser tabs as workers", () => {
  test("two tabs on WebGPU and a joined worker train data parallel to model.fit; a tab that presses Leave mid-fit is left behind, one that opens the link mid-fit is added, and the fit equals model.fit", async (t) => {
    const { launching, invite, port } = await tabCluster(3, (b) => b.strategy("data", { elastic: { minWorkers: 1 } }));
    assert.equal(invite, `http://127.0.0.1:${port}/#token=${TOKEN}`);
    const served = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(served.headers.get("content-security-policy"), WORKER_PAGE_CSP);
    assert.equal((await fetch(`http://127.0.0.1:${port}/etc/passwd`)).status, 404);
    const browser = await startBrowser();
    let c: Cluster | undefined;
    try {
      const tabs = [await openTab(browser, withBackend(invite, "webgpu")), await openTab(browser, withBackend(invite, "webgpu"))];
      const joiner = startJoiner(`ws://127.0.0.1:${port}`, { token: TOKEN });
      c = await launching;
      const tabRanks = c.workers.filter((w) => w.info.hostname.startsWith("tab ")).map((w) => w.rank);
      assert.equal(tabRanks.length, 2, c.workers.map((w) => w.info.hostname).join(", "));
      for (const r of tabRanks) {
        const info: WorkerInfo = c.workers[r]!.info;
        assert.equal(info.backend, "webgpu");
        assert.equal(info.gpu?.software, true, "SwiftShader is a software adapter, and the tab says so");
        assert.match(info.device, /^webgpu: .*software GPU/);
        assert.equal(info.dataPlane?.native, false);
      }
      assert.equal(await joiner.joined(), c.workers.findIndex((w) => !tabRanks.includes(w.rank)));

      const plan = c.plan(smallClassifier(6, 3), { batchSize: 24 });
      assert.match(plan.toString(), /ring links to browser tabs pass through the driver's relay \(a tab accepts no connections\): \d-\d, \d-\d; 1 link\(s\) direct/);
      const d = await differenceFromModelFit(c, { size: 96, seed: 96 });
      t.diagnostic(`two tabs and a worker: ${d.toExponential(2)} from model.fit`);
      assert.ok(d < 1e-4, `relative difference ${d}`);
      for (const { page } of tabs) {
        assert.match(await field(page, "rank"), /^[0-2] of 3$/);
        assert.match(await field(page, "backend"), /webgpu: .*software GPU/);
        assert.match(await field(page, "steps"), /^8\b/, "2 epochs of 4 batches");
      }

      // The page's own Leave button, pressed while the third step runs; after the fifth, a tab opens the link and is added at the next step boundary.
      const leaving = tabs[0]!.page;
      const leavingRank = Number((await field(leaving, "rank")).split(" ")[0]);
      let late: Awaited<ReturnType<typeof openTab>> | undefined;
      let batches = 0;
      const onBatchEnd = async (): Promise<void> => {
        if (++batches !== 5) return;
        late = await openTab(browser, withBackend(invite, "webgpu"));
        await waitFor("the late tab to be added", () => c!.workers.length === 4, 30_000);
      };
      const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 96, seed: 7 });
      const [m, ref] = [smallClassifier(6, 3), smallClassifier(6, 3)];
      const run = await c.fit(m, ds, { epochs: 2, batchSize: 24, shuffle: false, optimizer: "sgd", progress: false, callbacks: { onBatchEnd }, onStep: (s) => void (s.step === 2 && leaving.click("#leave")) });
      await modelFitReference(ref, ds, { epochs: 2, batchSize: 24, optimizer: { name: "sgd", learningRate: 0.01 }, shuffle: false });
      const after = maxRelativeDifference(m, ref);
      t.diagnostic(`rank ${leavingRank} left at step ${run.membership[0]?.step}, rank 3 joined at step ${run.membership[1]?.step}: ${after.toExponential(2)} from model.fit`);
      assert.deepEqual(run.membership.map((e) => [e.change, e.rank, e.workers]), [["left", leavingRank, 2], ["joined", 3, 3]]);
      assert.ok(run.history.at(-1)!.workers.some((w) => w.rank === 3), "the last step ran on the tab that joined");
      assert.ok(after < 1e-4, `relative difference ${after}`);
      assert.match(await field(leaving, "status"), /^stopped: you left/);
      assert.match(await field(late!.page, "rank"), /^3 of 4$/);
      assert.deepEqual([...tabs, late!].flatMap((x) => x.errors), []);
    } finally {
      await c?.close();
      await browser.close();
    }
  });

  test("asynchronous parameter servers with two tabs, one closed mid-fit; a tab with a wrong token is refused, one without a token says so, and the join waits on", async () => {
    const server = await startCliWorker(TOKEN);
    const { launching, invite } = await tabCluster(2, (b) => b.ps([server.url]).strategy("ps", { mode: "async" }));
    const browser = await startBrowser();
    let c: Cluster | undefined;
    try {
      const wrong = await openTab(browser, invite.replace(/token=.*/, "token=not-the-token"));
      const none = await openTab(browser, invite.replace(/#.*/, ""));
      await wrong.page.waitForSelector("#status[data-failed]", { timeout: 20_000 });
      assert.match(await field(wrong.page, "status"), /^failed: the driver's relay at .* refused the connection: the client did not prove the cluster token/);
      assert.match(await field(none.page, "status"), /^failed: this link has no token/);

      const first = await openTab(browser, invite);
      await openTab(browser, invite);
      c = await launching;
      assert.equal(c.workers.length, 2);
      assert.ok(c.workers.every((w) => w.info.hostname.startsWith("tab ")));
      const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 96, seed: 11 });
      const model = smallClassifier(6, 3);
      const before = model.getWeights().map((w) => w.dataSync().slice());
      // One tab closes at the fifth step: the servers go on with the other, which takes its slices.
      const run = await c.fit(model, ds, { epochs: 3, batchSize: 24, shuffle: false, optimizer: { name: "sgd", learningRate: 0.2 }, progress: false, onStep: (s) => void (s.step === 4 && first.page.close()) });
      const left = run.notes.map((n) => /^rank [01] left at .*closed its connection at step \d+; \d+ slice\(s\) handed to the others, (\d+) already applied/.exec(n)).find((m) => m !== null);
      assert.ok(left, run.notes.join("\n"));
      const perRank = run.notes.map((n) => /pushes per rank: rank 0 (\d+), rank 1 (\d+); servers applied (\d+) update/.exec(n)).find((m) => m !== null);
      assert.ok(perRank, run.notes.join("\n"));
      const [r0, r1, applied] = perRank.slice(1).map(Number) as [number, number, number];
      assert.ok(r0 > 0 && r1 > 0, `both tabs pushed: ${perRank[0]}`);
      // A push the closed tab sent that a server applied after the tab was gone counts as applied, not as its push.
      assert.equal(r0 + r1 + Number(left[1]), applied, `every push was applied once, none waited for: ${run.notes.join(" / ")}`);
      const losses = run.byEpoch.history.loss!;
      assert.ok(losses.at(-1)! < losses[0]!, `loss by epoch ${losses.join(", ")}`);
      assert.ok(model.getWeights().some((w, i) => w.dataSync().some((v, k) => v !== before[i]![k])), "the servers' weights came back trained");
    } finally {
      await c?.close();
      await browser.close();
      await server.stop();
    }
  });

  test("a pipeline over a tab and a joined worker equals model.fit; the page refuses a class it was not built with, naming it and saying how; a page built with the user's module trains it to model.fit", async () => {
    const scaled = (): tf.LayersModel => tf.sequential({ layers: [new LearnedScale({ inputShape: [6] } as never), tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 3 }) })] });
    const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 48, seed: 13 });
    const options = { epochs: 1, batchSize: 24, shuffle: false, optimizer: "sgd" as const, progress: false };
    const browser = await startBrowser();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-page-"));
    let c: Cluster | undefined;
    try {
      // The joined worker claims rank 1: the tab holds stage 0, the one with the custom layer.
      let { launching, invite, port } = await tabCluster(2, (b) => b.strategy("pipeline", { microBatches: 2, schedule: "1f1b" }));
      await openTab(browser, withBackend(invite, "webgpu"));
      startJoiner(`ws://127.0.0.1:${port}`, { token: TOKEN, args: ["--rank", "1"] });
      c = await launching;
      assert.match(c.workers[0]!.info.hostname, /^tab /);
      const piped = await differenceFromModelFit(c, { size: 96, seed: 95 });
      assert.ok(piped < 1e-4, `pipeline over a tab and a worker: relative difference ${piped}`);
      await assert.rejects(c.fit(scaled(), ds, options), (err: Error & { hint?: string }) => /LearnedScale/.test(err.message) && /MESHTRAIN_PAGE_MODULES=.*MESHTRAIN_WORKER_PAGE/.test(err.hint ?? ""));
      await c.close();

      const built = spawnSync(process.execPath, [path.join(__dirname, "..", "..", "..", "scripts", "build-browser.js"), "--out", dir], { env: { ...process.env, MESHTRAIN_PAGE_MODULES: path.join(__dirname, "..", "helpers", "custom-layers.js") }, encoding: "utf8" });
      assert.equal(built.status, 0, built.stderr);
      process.env.MESHTRAIN_WORKER_PAGE = dir;
      ({ launching, invite, port } = await tabCluster(1, (b) => b.strategy("data")));
      await openTab(browser, invite);
      c = await launching;
      const [m, ref] = [scaled(), scaled()];
      ref.setWeights(m.getWeights());
      await c.fit(m, ds, options);
      await modelFitReference(ref, ds, { epochs: 1, batchSize: 24, optimizer: { name: "sgd", learningRate: 0.01 }, shuffle: false });
      const d = maxRelativeDifference(m, ref);
      assert.ok(d < 1e-4, `relative difference ${d}`);
    } finally {
      delete process.env.MESHTRAIN_WORKER_PAGE;
      await c?.close();
      await browser.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
