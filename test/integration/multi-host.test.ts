import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, WorkerLostError } from "../../sdk/index";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";
import { makeHosts, netnsMissing, type Hosts } from "../helpers/netns";
import { modelFitReference } from "../helpers/reference";
import { TEST_HEARTBEAT } from "../helpers/heartbeat";

/**
 * Workers on separate hosts: network namespaces with their own addresses, made by the test,
 * workers started there with the CLI, the driver connecting by address. Training matches a
 * single process; then one host's link is cut and the error that names it is observed.
 */

tf.enableProdMode();
const TOKEN = "multi-host-test-token-0123456789";
const missing = netnsMissing();

describe("workers on separate hosts (network namespaces)", { skip: missing ?? false }, () => {
  let net: Hosts;
  let urls: string[] = [];
  let serverUrls: string[] = [];
  before(async () => {
    net = makeHosts(4);
    const workers = await Promise.all(net.hosts.map((h) => net.worker(h, TOKEN)));
    urls = workers.map((w) => w.url).slice(0, 2);
    serverUrls = workers.map((w) => w.url).slice(2);
  });
  after(() => net?.destroy());

  test("the driver reaches them by address and trains to model.fit's result", async () => {
    assert.deepEqual(urls, ["ws://10.231.0.2:7070", "ws://10.231.0.3:7070"]);
    const c = await cluster().connect(urls).token(TOKEN).backend("cpu").launch();
    try {
      assert.deepEqual(c.workers.map((w) => w.address), urls);
      const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 120, seed: 8 });
      const a = smallClassifier(6, 3);
      const b = smallClassifier(6, 3);
      await c.fit(a, ds, { epochs: 2, batchSize: 24, shuffle: false, optimizer: "sgd" });
      await modelFitReference(b, ds, { epochs: 2, batchSize: 24, optimizer: { name: "sgd", learningRate: 0.01 }, shuffle: false });
      const diff = maxRelativeDifference(a, b);
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
    } finally {
      await c.close();
    }
  });

  test("cutting one host's link mid-fit is a WorkerLostError naming it, within twice the heartbeat timeout", async (t) => {
    const c = await cluster().connect(urls).token(TOKEN).backend("cpu").heartbeat(TEST_HEARTBEAT).launch();
    try {
      const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 20_000, seed: 8 });
      let cutAt = 0;
      const err = await c
        .fit(smallClassifier(6, 3), ds, {
          batchSize: 8,
          onStep: (s) => {
            if (s.step === 5) {
              cutAt = performance.now();
              net.cut(net.hosts[1]!);
            }
          },
        })
        .then(() => undefined, (e: unknown) => e);
      const ms = performance.now() - cutAt;
      t.diagnostic(`${ms.toFixed(0)} ms after the cut: ${(err as Error).message.split("\n")[0]}`);
      assert.ok(err instanceof WorkerLostError, String(err));
      assert.match((err as Error).message, /worker rank 1 \(ws:\/\/10\.231\.0\.3:7070\) was silent for \d+ ms/);
      assert.ok(ms < 2 * TEST_HEARTBEAT.timeoutMs, `reported ${ms.toFixed(0)} ms after the cut`);
    } finally {
      await c.close();
    }
  });

  test("async parameter servers on their own hosts carry on when a worker's host is cut off", async (t) => {
    // Host 3 was not cut; hosts 0 and 2 run workers, host 3 the server.
    const c = await cluster().connect([urls[0]!, serverUrls[0]!]).ps([serverUrls[1]!]).token(TOKEN).backend("cpu").strategy("ps", { mode: "async" }).heartbeat(TEST_HEARTBEAT).launch();
    try {
      const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 960, seed: 8 });
      const run = await c.fit(smallClassifier(6, 3), ds, { batchSize: 16, optimizer: "sgd", onStep: (s) => void (s.step === 5 && net.cut(net.hosts[2]!)) });
      const d = run.departures[0];
      t.diagnostic(`rank 1 (host ${net.hosts[2]!.address}) left at step ${d?.step}: ${d?.cause}; ${run.pushes.length} pushes recorded`);
      assert.equal(run.departures.length, 1);
      assert.match(d!.cause, /worker rank 1 \(ws:\/\/10\.231\.0\.4:7070\) was silent/);
      assert.equal(run.pushes.reduce((a, p) => a + p.samples, 0) + 8 * d!.alreadyApplied, ds.size, "every sample trained once");
    } finally {
      await c.close();
    }
  });
});
