import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, LaunchError } from "../../sdk/index";
import { fitsLikeModelFit } from "../helpers/fit-check";
import { isAlive, processesMatching, waitFor } from "../helpers/processes";
import { SSHD, startSshHosts, type SshHosts } from "../helpers/sshd";
import { ensureDebianPackages } from "../helpers/system-deps";
import { watchOutput } from "../helpers/watch-output";
import { withOwnBundleCache } from "../helpers/bundle-cache";

/**
 * cluster().ssh(hosts): workers started through the system's ssh client on hosts that are
 * network namespaces, each with a real sshd. Training equals model.fit; no worker outlives
 * close() or a driver killed outright; a preflight that fails names every failing host and why,
 * and starts nothing.
 */

tf.enableProdMode();

describe("workers started over ssh", () => {
  let net: SshHosts;
  let a: string;
  let b: string;
  /** A host whose sessions see this checkout's dist/ empty: Node there, meshtrain not. */
  let bare: string;
  before(async () => {
    ensureDebianPackages("openssh-server", ["openssh-server"], () => fs.existsSync(SSHD));
    net = await startSshHosts(3, "10.232.0", { host: 2, paths: [path.join(__dirname, "..", "..")] });
    [a, b, bare] = net.hosts.map((h) => h.address) as [string, string, string];
  });
  after(() => net?.destroy());

  test("two hosts, a worker on each: data parallelism equals model.fit; close() ends every remote process", async () => {
    const c = await cluster().ssh([a, `root@${b}:22`], { workersPerHost: 1, sshArgs: net.sshArgs }).backend("cpu").launch();
    let pids: number[] = [];
    try {
      assert.deepEqual(c.workers.map((w) => new URL(w.address).hostname), [a, b], "rank 0 on the first host, rank 1 on the second");
      assert.ok(c.notes.some((n) => n === `ssh: 2 worker(s) on ${a}, root@${b}:22`), c.notes.join("\n"));
      pids = c.workers.map((w) => w.info.pid);
      assert.equal(processesMatching("--token-stdin").length, 4, "an ssh client here and a worker there for each rank");
      await fitsLikeModelFit(c, { size: 96, seed: 5 });
    } finally {
      await c.close();
    }
    await waitFor("the remote workers and their ssh clients to end", () => pids.every((p) => !isAlive(p)) && processesMatching("--token-stdin").length === 0, 15_000);
  });

  test("two workers on one host; a driver killed outright: its ssh clients end, so the remote workers see stdin close and exit", async () => {
    const script = path.join(__dirname, "..", "helpers", "launcher-driver-script.js");
    const driver = spawn(process.execPath, [script, JSON.stringify({ ssh: { hosts: [b], sshArgs: net.sshArgs, workersPerHost: 2 } })], { stdio: ["ignore", "pipe", "pipe"] });
    try {
      const m = await watchOutput(driver).match(/launched (\d+) (\d+)/, 60_000, "the ssh driver launching");
      const pids = [Number(m[1]), Number(m[2])];
      driver.kill("SIGKILL");
      await waitFor(`remote workers ${pids.join(", ")} to exit after their driver died`, () => pids.every((p) => !isAlive(p)) && processesMatching("--token-stdin").length === 0, 20_000);
    } finally {
      driver.kill("SIGKILL");
    }
  });

  test('ship: "always": the worker bundle (of bundleBackends) goes to each host over ssh, runs there and trains to model.fit; a second launch copies nothing', async () => {
    // The driver's cache in a folder of the test's; the hosts' is their user's (~/.cache), removed after.
    let key = "";
    try {
      await withOwnBundleCache(() => shipTwice((k) => (key = k)));
    } finally {
      if (key) fs.rmSync(path.join(os.homedir(), ".cache", "meshtrain", "bundles", key), { recursive: true, force: true });
    }
  });

  /** Two launches shipping the bundle to both hosts: the first copies it, the second finds it there. */
  async function shipTwice(keyed: (key: string) => void): Promise<void> {
    const launch = (): ReturnType<ReturnType<typeof cluster>["launch"]> =>
      cluster().ssh([a, b], { sshArgs: net.sshArgs, ship: "always", bundleBackends: ["native"] }).backend("cpu").launch();
    const c = await launch();
    let key = "";
    try {
      const note = c.notes.find((n) => n.startsWith("ssh: the worker bundle")) ?? c.notes.join("\n");
      key = /the worker bundle (\w+)/.exec(note)?.[1] ?? "";
      keyed(key);
      assert.equal(note, `ssh: the worker bundle ${key} (made for this launch) runs on ${a} (copied), ${b} (copied)`);
      const command = fs.readFileSync(`/proc/${c.workers[0]!.info.pid}/cmdline`, "utf8").split("\0").join(" ");
      assert.match(command, new RegExp(`/\\.cache/meshtrain/bundles/${key}/meshtrain-worker-[\\d.]+/meshtrain-worker\\.js worker --join`));
      // The hosts share this machine's files: the shipped bundle holds the native backend only, as asked.
      const shipped = path.dirname(command.split(" ").find((w) => w.endsWith("/meshtrain-worker.js"))!);
      assert.ok(fs.existsSync(path.join(shipped, "native", "build", "meshtrain_native.node")), shipped);
      assert.deepEqual(fs.readdirSync(shipped).filter((f) => f.endsWith(".wasm")), [], "no wasm binaries: bundleBackends was native only");
      assert.ok(!fs.existsSync(path.join(shipped, "bench")), "a launcher ships no bench:gpu");
      await fitsLikeModelFit(c, { size: 96, seed: 5 });
    } finally {
      await c.close();
    }
    const again = await launch();
    try {
      assert.ok(again.notes.includes(`ssh: the worker bundle ${key} (from this machine's cache) runs on ${a} (already there), ${b} (already there)`), again.notes.join("\n"));
    } finally {
      await again.close();
    }
  }

  test('ship: "auto" (the default): a host with Node but no meshtrain gets the bundle and trains beside a host with meshtrain, which gets nothing', async () => {
    let key = "";
    try {
      await withOwnBundleCache(async () => {
        const c = await cluster().ssh([a, bare], { sshArgs: net.sshArgs }).backend("cpu").launch();
        try {
          const note = c.notes.find((n) => n.startsWith("ssh: the worker bundle")) ?? c.notes.join("\n");
          key = /the worker bundle (\w+)/.exec(note)?.[1] ?? "";
          assert.equal(note, `ssh: the worker bundle ${key} (made for this launch) runs on ${bare} (copied)`);
          const commands = c.workers.map((w) => fs.readFileSync(`/proc/${w.info.pid}/cmdline`, "utf8").split("\0").join(" "));
          assert.match(commands[0]!, /dist\/sdk\/cli\/main\.js worker --join/, "the host with meshtrain runs its own");
          assert.match(commands[1]!, new RegExp(`/\\.cache/meshtrain/bundles/${key}/meshtrain-worker-[\\d.]+/meshtrain-worker\\.js worker --join`));
          await fitsLikeModelFit(c, { size: 96, seed: 5 });
        } finally {
          await c.close();
        }
      });
    } finally {
      if (key) fs.rmSync(path.join(os.homedir(), ".cache", "meshtrain", "bundles", key), { recursive: true, force: true });
    }
  });

  test("the preflight fails once, naming each failing host and why, and starts nothing", async () => {
    const launching = cluster().ssh([a, "10.232.0.9", `${b}:2222`], { sshArgs: [...net.sshArgs, "-o", "ConnectTimeout=3"] }).backend("cpu").launch();
    await assert.rejects(launching, (e: unknown) => {
      assert.ok(e instanceof LaunchError, String(e));
      assert.match(e.message, /ssh preflight failed on 2 of 3 host\(s\)/);
      assert.match(e.message, /10\.232\.0\.9: unreachable over ssh \(ssh: connect to host 10\.232\.0\.9 port 22: (No route to host|Connection timed out)\)/);
      assert.match(e.message, new RegExp(`${b}:2222: unreachable over ssh \\(ssh: connect to host ${b} port 2222: Connection refused\\)`));
      assert.doesNotMatch(e.message, new RegExp(`\\n  ${a}:`), "the good host is not blamed");
      return true;
    });
    assert.equal(processesMatching("--token-stdin").length, 0);
    const missing = cluster().ssh([a], { sshArgs: net.sshArgs, command: `${process.execPath} /nowhere/meshtrain/cli/main.js` }).launch();
    await assert.rejects(missing, /ssh preflight failed on 1 of 1 host\(s\):\n {2}10\.232\.0\.2: meshtrain is missing there \(\/nowhere\/meshtrain\/cli\/main\.js\)/);
    const noNode = cluster().ssh([a], { sshArgs: net.sshArgs, command: "/opt/no-node/bin/node x.js" }).launch();
    await assert.rejects(noNode, /10\.232\.0\.2: cannot run \/opt\/no-node\/bin\/node x\.js there \(.*(not found|No such file or directory)\)/);
    const unreachableDriver = cluster().ssh([a], { sshArgs: net.sshArgs, driverHost: "127.0.0.1" }).launch();
    await assert.rejects(unreachableDriver, /10\.232\.0\.2: the driver's address ws:\/\/127\.0\.0\.1:\d+ is not reachable from there \(ECONNREFUSED\)/);
  });
});
