import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, LaunchError } from "../../sdk/index";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";
import { startCliWorker, type CliWorker } from "../helpers/processes";
import { modelFitReference } from "../helpers/reference";

/**
 * Workers started with `meshtrain worker --tls-cert --tls-key` serve wss://; a driver that trusts
 * the certificate (.tls({ ca })) trains with them, the ring between them is encrypted too, and a
 * driver that does not trust it is refused with an error that says what to do.
 */

tf.enableProdMode();
const TOKEN = "tls-test-token-0123456789abcdef";

describe("TLS between the driver and the workers, and between the workers", () => {
  let dir: string;
  let cert: string;
  let workers: CliWorker[] = [];
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-tls-"));
    // A self-signed certificate for this machine's loopback address, made by the test.
    const r = spawnSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path.join(dir, "key.pem"), "-out", path.join(dir, "cert.pem"), "-days", "1", "-subj", "/CN=meshtrain test", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], { encoding: "utf8" });
    assert.equal(r.status, 0, `openssl failed: ${r.stderr}`);
    cert = fs.readFileSync(path.join(dir, "cert.pem"), "utf8");
    workers = await Promise.all([0, 1].map(() => startCliWorker(TOKEN, ["--tls-cert", path.join(dir, "cert.pem"), "--tls-key", path.join(dir, "key.pem")])));
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("the workers listen on wss://, and two of them train over TLS to model.fit's result", async () => {
    assert.ok(workers.every((w) => w.url.startsWith("wss://127.0.0.1:")), workers.map((w) => w.url).join(", "));
    const c = await cluster().connect(workers.map((w) => w.url)).token(TOKEN).tls({ ca: cert }).backend("cpu").launch();
    try {
      const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 96, seed: 5 });
      const distributed = smallClassifier(6, 3);
      const single = smallClassifier(6, 3);
      const run = await c.fit(distributed, ds, { epochs: 2, batchSize: 16, optimizer: "sgd", shuffle: false });
      // The native data plane does not encrypt: under TLS every tensor stays on the wss:// links, and the run says so.
      assert.equal(run.dataPlane?.path, "websocket");
      assert.match(run.toString(), /all-reduce over the WebSocket links .*TLS is on/);
      await modelFitReference(single, ds, { epochs: 2, batchSize: 16, optimizer: { name: "sgd", learningRate: 0.01 }, shuffle: false });
      const diff = maxRelativeDifference(distributed, single);
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
    } finally {
      await c.close();
    }
  });

  test('.dataPlane("native") under TLS is refused before anything starts, saying why', () => {
    assert.throws(() => cluster().connect(workers.map((w) => w.url)).token(TOKEN).tls({ ca: cert }).dataPlane("native").spec(), /the native data plane does not encrypt, and this cluster uses TLS/);
  });

  test("a driver that does not trust the certificate is refused, and told to pass it", async () => {
    await assert.rejects(cluster().connect([workers[0]!.url]).token(TOKEN).timeouts({ connectMs: 5000 }).launch(), (e: unknown) => {
      assert.ok(e instanceof LaunchError, String(e));
      assert.match((e as Error).message, /certificate/i);
      assert.match((e as Error).message, /help: .*\.tls\(\{ ca/);
      return true;
    });
  });

  test("plain ws:// to a TLS worker fails, and the builder refuses to mix tls() with ws://", async () => {
    await assert.rejects(cluster().connect([workers[0]!.url.replace("wss:", "ws:")]).token(TOKEN).timeouts({ connectMs: 3000 }).launch(), LaunchError);
    assert.throws(() => cluster().connect(["ws://127.0.0.1:9"]).token(TOKEN).tls({ ca: cert }).spec(), /plain ws:\/\//);
    assert.throws(() => cluster().workers(2).tls({ ca: cert }).spec(), /local workers talk over loopback/);
    assert.throws(() => cluster().tls({ ca: "not a certificate" }), /must be a PEM certificate/);
  });

  test("a worker given only one of --tls-cert and --tls-key refuses to start", async () => {
    await assert.rejects(startCliWorker(TOKEN, ["--tls-cert", path.join(dir, "cert.pem")]), /--tls-cert and --tls-key go together/);
  });
});
