import assert from "node:assert/strict";
import { spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import { blocksRun, ROOT, scratchDir, where, writeScript, type ReadmeBlock } from "../helpers/readme";
import { makeHosts, netnsMissing, type Host, type Hosts } from "../helpers/netns";
import { runInGroup } from "../helpers/run-block";
import { watchOutput } from "../helpers/watch-output";

/**
 * "Running workers on other machines" as written: hosts with the README's addresses (network
 * namespaces on a bridge of their own, so this machine's routes are untouched), each running the
 * README's worker command with `sh`, and a driver host running the README's driver program,
 * first over plain WebSockets, then with the TLS commands and a certificate for those addresses.
 */

const TOKEN = "readme-hosts-test-token-0123456789abcdef";
const missing = netnsMissing();

function block(lang: string, contains: string): ReadmeBlock {
  const hit = blocksRun("hosts").filter((b) => b.lang === lang && b.code.includes(contains));
  assert.equal(hit.length, 1, `one README ${lang} block with ${contains}`);
  return hit[0]!;
}

/** The addresses a driver block connects to, e.g. ["10.0.0.2", "10.0.0.3"]. */
function addresses(b: ReadmeBlock): string[] {
  return [...b.code.matchAll(/wss?:\/\/([\d.]+):7070/g)].map((m) => m[1]!);
}

/**
 * A project that installed meshtrain, as the README's reader has: its own package.json, and
 * meshtrain with its `.bin` link in node_modules. Inside this repository itself `npx meshtrain`
 * would instead install the repository into npm's npx cache (npm 11 does that for a package's own
 * bin), rebuilding it first: over 60 s on a slow machine, and a build of dist/ under running tests.
 */
function userProject(dir: string): void {
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "readme-hosts-project", private: true, dependencies: { meshtrain: "*" } }));
  const bin = path.join(dir, "node_modules", ".bin");
  fs.mkdirSync(bin, { recursive: true });
  fs.symlinkSync(ROOT, path.join(dir, "node_modules", "meshtrain"), "dir");
  const { bin: bins } = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { bin: Record<string, string> };
  for (const [name, rel] of Object.entries(bins)) fs.symlinkSync(path.join("..", "meshtrain", rel), path.join(bin, name));
}

/** Runs the README worker block with sh on each host; resolves once all listen, and stops them all if one does not. */
async function startWorkers(net: Hosts, hosts: Host[], b: ReadmeBlock, cwd: string): Promise<ChildProcess[]> {
  const children = hosts.map((h) => net.spawnIn(h, "sh", ["-c", b.code], { cwd, env: { MESHTRAIN_TOKEN: TOKEN }, detached: true }));
  try {
    await Promise.all(children.map((c, i) => watchOutput(c).match(/listening on wss?:\/\/0\.0\.0\.0:7070/, 60_000, `the README's worker command on ${hosts[i]!.address}`)));
  } catch (e) {
    // Left running, a worker would hold its port for the next test and its pipes would keep this file from ever exiting.
    stopWorkers(children);
    throw e;
  }
  return children;
}

function stopWorkers(children: ChildProcess[]): void {
  for (const c of children) {
    c.removeAllListeners("exit");
    try {
      process.kill(-c.pid!, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

describe("the README's commands for workers on other machines", { skip: missing ?? false }, () => {
  const driverBlock = block("ts", 'connect(["ws://');
  const subnet = addresses(driverBlock)[0]!.split(".").slice(0, 3).join(".");
  let net: Hosts;
  let dir: string;
  before(() => {
    net = makeHosts(3, { subnet, isolated: true });
    dir = scratchDir("hosts");
    userProject(dir);
  });
  after(() => {
    net?.destroy();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function runDriver(b: ReadmeBlock, workerBlock: ReadmeBlock): Promise<string> {
    const [a, w] = [addresses(b), net.hosts.slice(0, 2)];
    assert.deepEqual(a, w.map((h) => h.address), "the README's addresses are the hosts'");
    const workers = await startWorkers(net, w, workerBlock, dir);
    try {
      const { script } = writeScript(b, dir);
      const driver = net.hosts[2]!;
      const r = await runInGroup("ip", ["netns", "exec", driver.name, process.execPath, script], { cwd: dir, env: { MESHTRAIN_TOKEN: TOKEN }, timeoutMs: 120_000 });
      assert.equal(r.code, 0, `${where(b)} on ${driver.address} exited ${r.code ?? r.signal}:\n${r.out}`);
      for (let i = 0; i < a.length; i++) assert.match(r.out, new RegExp(`rank ${i}: wss?://${a[i]!.replace(/\./g, "\\.")}:7070 on `));
      // "The workers stay up": both still run after the driver closed the cluster.
      for (const c of workers) assert.equal(c.exitCode, null);
      return r.out;
    } finally {
      stopWorkers(workers);
    }
  }

  test("plain WebSockets: the worker command on two hosts, the driver program on a third", async (t) => {
    t.diagnostic(await runDriver(driverBlock, block("sh", "npx meshtrain worker --host 0.0.0.0 --port 7070\n")));
  });

  test("TLS: the workers' certificate command and the driver that trusts cert.pem", async (t) => {
    const hosts = addresses(driverBlock).map((a) => `IP:${a}`).join(",");
    const ssl = spawnSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path.join(dir, "key.pem"), "-out", path.join(dir, "cert.pem"), "-days", "1", "-subj", "/CN=meshtrain readme", "-addext", `subjectAltName=${hosts}`], { encoding: "utf8" });
    assert.equal(ssl.status, 0, `openssl: ${ssl.stderr}`);
    t.diagnostic(await runDriver(block("ts", 'connect(["wss://'), block("sh", "--tls-cert cert.pem --tls-key key.pem")));
  });
});
