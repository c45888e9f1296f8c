import { test, type TestContext } from "node:test";
import { randomBytes } from "node:crypto";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CLI, freePort, isAlive, processesMatching, waitFor } from "../helpers/processes";
import { watchOutput, type WatchedOutput } from "../helpers/watch-output";
import { localPods, parseManifests, type LocalPod } from "../helpers/k8s-pods";
import { addHostsLine } from "../helpers/etc-hosts";
import { withOwnBundleCache } from "../helpers/bundle-cache";

const DRIVER_SCRIPT = path.join(__dirname, "..", "helpers", "k8s-driver-script.js");

interface Running {
  child: ChildProcess;
  out: WatchedOutput;
  /** The most resident memory seen (VmHWM), bytes. */
  peak(): number;
  exit: Promise<number | null>;
}

/** A pod's process, with only the environment the pod would have (no rank variables of ours). */
function run(pod: LocalPod): Running {
  const child = spawn(pod.argv[0]!, pod.argv.slice(1), { env: { PATH: process.env.PATH ?? "", HOME: os.tmpdir(), ...pod.env }, stdio: ["ignore", "pipe", "pipe"] });
  const out = watchOutput(child);
  let peak = 0;
  const timer = setInterval(() => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${child.pid}/status`, "utf8"));
      if (m) peak = Math.max(peak, Number(m[1]) * 1024);
    } catch {
      // Gone.
    }
  }, 200);
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => {
    clearInterval(timer);
    resolve(code);
  }));
  return { child, out, peak: () => peak, exit };
}

/** `meshtrain k8s` into a file under a fresh folder; the manifests and the pods as local processes. */
async function generate(args: string[]): Promise<{ dir: string; port: number; pods: ReturnType<typeof localPods>; file: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mt-k8s-"));
  const port = await freePort();
  const file = path.join(dir, "run.yaml");
  // A name no other run here uses: the test puts it in /etc/hosts.
  const name = `mtk8s-${randomBytes(4).toString("hex")}`;
  const r = spawnSync(process.execPath, [CLI, "k8s", "--workers", "2", "--image", "local/meshtrain:test", "--name", name, "--port", String(port), "--meshtrain", `${process.execPath} ${CLI}`, "--out", file, ...args], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /kubectl apply -f /);
  return { dir, port, file, pods: localPods(parseManifests(fs.readFileSync(file, "utf8")), dir) };
}

/**
 * Worker 1 first, while the driver's Service name resolves to nothing (no driver pod yet), then
 * the driver with its name resolving, then worker 0: pods start in any order, and joiners wait
 * for the name and then for the driver to listen. `t.after` takes the name out of /etc/hosts.
 */
async function startPods(t: TestContext, pods: ReturnType<typeof localPods>): Promise<{ driver: Running; workers: Running[] }> {
  const w1 = run(pods.workers[1]!);
  await w1.out.match(new RegExp(`the driver's host ${pods.service} does not resolve yet`), 30_000, "worker 1 waiting for the driver's name");
  t.after(addHostsLine(`127.0.0.1 ${pods.service}`));
  const driver = run(pods.driver);
  const w0 = run(pods.workers[0]!);
  return { driver, workers: [w0, w1] };
}

test("meshtrain k8s's pods, run here as the kubelet would: the workers join the driver's Service with their completion index as rank, train as model.fit does, and exit 0 with the driver", async (t) => {
  const { file, port, pods } = await generate(["--driver-command", `${process.execPath} ${DRIVER_SCRIPT}`]);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600, "the manifests hold the token: only the owner may read them");
  const { driver, workers } = await startPods(t, pods);
  assert.equal(await driver.exit, 0, driver.out.output());
  assert.equal(driver.out.output().match(/ranks (.*)/)?.[1], workers.map((w) => w.child.pid).join(" "), "rank i is the pod with JOB_COMPLETION_INDEX i");
  const difference = Number(driver.out.output().match(/difference (\S+)/)?.[1]);
  assert.ok(difference < 1e-4, `relative difference from model.fit ${difference}`);
  for (const [i, w] of workers.entries()) {
    assert.equal(await w.exit, 0, w.out.output());
    assert.match(w.out.output(), new RegExp(`as rank ${i} of 2`));
  }
  await waitFor("no process left", () => processesMatching(`${pods.service}:${port}`).filter(isAlive).length === 0, 10_000);
  t.diagnostic(`relative difference from model.fit: ${difference.toExponential(2)}`);
});

test("--ship: the worker pods' image needs only Node: an init container unpacks the bundle from its ConfigMaps, and its workers train as model.fit does", async (t) => {
  const { pods } = await withOwnBundleCache(() => generate(["--driver-command", `${process.execPath} ${DRIVER_SCRIPT}`, "--ship", "--worker-image", "node:20-bookworm-slim"]));
  for (const w of pods.workers) {
    assert.equal(w.init.length, 1);
    // The init container's command (sh -c "cat ... | tar ..."), run as the kubelet runs it, in the pod's own folders.
    const unpack = spawnSync(w.init[0]![0]!, w.init[0]!.slice(1), { encoding: "utf8" });
    assert.equal(unpack.status, 0, unpack.stderr);
    assert.equal(path.basename(w.argv[1]!), "meshtrain-worker.js");
    assert.ok(fs.existsSync(w.argv[1]!), `the unpacked worker program ${w.argv[1]}`);
    assert.equal(w.argv[0], "node", "the image's node runs it: nothing of meshtrain's in the image");
  }
  const { driver, workers } = await startPods(t, pods);
  assert.equal(await driver.exit, 0, driver.out.output());
  const difference = Number(driver.out.output().match(/difference (\S+)/)?.[1]);
  assert.ok(difference < 1e-4, `relative difference from model.fit ${difference}`);
  for (const w of workers) assert.equal(await w.exit, 0, w.out.output());
});

test("the default driver pod trains the MNIST demo on the joined workers, and no pod grows past the memory it requested", async (t) => {
  const { pods } = await generate(["--batch-size", "64"]);
  assert.equal(pods.driver.argv[2], "demo");
  const { driver, workers } = await startPods(t, pods);
  assert.equal(await driver.exit, 0, `the demo exits 0 when held-out accuracy reaches 90%:\n${driver.out.output()}`);
  const accuracy = Number(driver.out.output().match(/held-out accuracy: ([\d.]+)%/)?.[1]);
  assert.ok(accuracy >= 90, `accuracy ${accuracy}`);
  for (const w of workers) assert.equal(await w.exit, 0, w.out.output());
  const MiB = (b: number): string => `${(b / 2 ** 20).toFixed(0)} MiB`;
  for (const [name, r, pod] of [["driver", driver, pods.driver], ["worker 0", workers[0]!, pods.workers[0]!], ["worker 1", workers[1]!, pods.workers[1]!]] as const) {
    t.diagnostic(`${name}: peak ${MiB(r.peak())} resident, requested ${MiB(pod.memoryRequestBytes)}`);
    assert.ok(r.peak() > 0 && r.peak() <= pod.memoryRequestBytes, `${name} peaked at ${MiB(r.peak())}, over its request of ${MiB(pod.memoryRequestBytes)}`);
  }
  t.diagnostic(`held-out accuracy ${accuracy}%`);
});
