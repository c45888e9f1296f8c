import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, ProtocolError } from "../../sdk/index";
import { fitsLikeModelFit } from "../helpers/fit-check";
import { CLI, startWorkerProgram, type CliWorker } from "../helpers/processes";
import { watchOutput } from "../helpers/watch-output";

/**
 * The worker bundle (`meshtrain bundle`) as a host with only Node meets it: extracted into an
 * empty folder with no node_modules above it, its workers train with a driver to model.fit's
 * result, on the prebuilt native addon and on wasm; a host where the prebuilt addon does not
 * load builds it from the bundle's sources; a bundle of another version is refused.
 */

tf.enableProdMode();
const TOKEN = "bundle-test-token-0123456789abcdef";

describe("the worker bundle, on a host with Node alone", () => {
  let tmp: string;
  let tarball: string;
  let made: string;
  const workers: CliWorker[] = [];

  /** Extracts the bundle into a folder of its own; returns the worker program's path. */
  function extract(name: string): string {
    const host = path.join(tmp, name);
    fs.mkdirSync(host);
    const r = spawnSync("tar", ["-xzf", tarball, "-C", host], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const [dir] = fs.readdirSync(host);
    return path.join(host, dir!, "meshtrain-worker.js");
  }

  /** Starts a bundled worker from an empty folder, as a host without npm runs it: no NODE_PATH, nothing installed. */
  async function start(program: string, args: string[] = []): Promise<CliWorker> {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: tmp, MESHTRAIN_TOKEN: TOKEN };
    const w = await startWorkerProgram([program, "--port", "0", ...args], { env, cwd: tmp });
    workers.push(w);
    return w;
  }

  /** The bundle command's environment: this file's own cache, where the portable addon is kept between makes. */
  const cliEnv = (): NodeJS.ProcessEnv => ({ ...process.env, XDG_CACHE_HOME: path.join(tmp, "cache") });

  before(() => {
    // os.tmpdir() has no node_modules above it: what the bundled worker finds is its own.
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-bundle-test-"));
    tarball = path.join(tmp, "worker.tar.gz");
    const r = spawnSync(process.execPath, [CLI, "bundle", "--out", tarball, "--list"], { encoding: "utf8", cwd: tmp, env: cliEnv(), timeout: 600_000 });
    assert.equal(r.status, 0, `meshtrain bundle failed:\n${r.stdout}\n${r.stderr}`);
    made = r.stdout;
  });

  after(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  test("meshtrain bundle writes one .tar.gz under 20 MiB holding the worker, its thread, the prebuilt addon and its sources, and the wasm binaries", () => {
    const mib = fs.statSync(tarball).size / 2 ** 20;
    assert.ok(mib < 20, `${mib.toFixed(1)} MiB`);
    assert.match(made, new RegExp(`worker\\.tar\\.gz: ${mib.toFixed(1)} MiB`), "the size printed is the file's");
    const listed = spawnSync("tar", ["-tzf", tarball], { encoding: "utf8" }).stdout;
    for (const part of ["meshtrain-worker.js", "comm/entry.js", "native/build/meshtrain_native.node", "native/src/gemm.c", "scripts/build-native.js", "tfjs-backend-wasm-simd.wasm", "manifest.json"]) {
      assert.match(listed, new RegExp(`/${part.replace(/\./g, "\\.")}$`, "m"), part);
    }
    assert.match(made, /native\/build\/meshtrain_native\.node .* prebuilt for any x86-64 CPU/);
    // The portable addon is kept in the cache by its sources: the next bundle copies it, compiling nothing.
    const addons = path.join(tmp, "cache", "meshtrain", "addons");
    const kept = fs.readdirSync(addons).filter((d) => !d.includes(".partial"));
    assert.equal(kept.length, 1, kept.join(", "));
    const inside = spawnSync("tar", ["-xzOf", tarball, `${listed.split("\n")[0]!.split("/")[0]}/native/build/meshtrain_native.node`]).stdout as Buffer;
    assert.ok(inside.equals(fs.readFileSync(path.join(addons, kept[0]!, "meshtrain_native.node"))), "the bundle's addon is the one kept");
  });

  test("two bundled workers, one on the native addon and one on wasm, train to model.fit's result", async () => {
    const program = extract("host-a");
    const ws = [await start(program), await start(program, ["--backend", "wasm"])];
    const c = await cluster().connect(ws.map((w) => w.url)).token(TOKEN).launch();
    try {
      assert.deepEqual(c.workers.map((w) => w.info.backend), ["native", "wasm"]);
      await fitsLikeModelFit(c, { size: 96, seed: 5 });
    } finally {
      await c.close();
    }
  });

  test("`node meshtrain-worker.js devices` runs from the bundle alone: the CPU backends it has, and why no WebGPU", () => {
    const program = extract("host-d");
    const r = spawnSync(process.execPath, [program, "devices"], { encoding: "utf8", cwd: tmp, env: { PATH: process.env.PATH, HOME: tmp }, timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /CPU backends:\n {2}node: not available: @tensorflow\/tfjs-node is not installed[^\n]*\n {2}native: available\n {2}wasm: available/);
    assert.match(r.stdout, /WebGPU adapters \(Dawn\): none\n[^\n]*Dawn's WebGPU bindings \(the webgpu package\) are not in this worker bundle: make it with meshtrain bundle --backends native,wasm,webgpu/);
  });

  test("where the prebuilt addon does not load, the worker builds it from the bundle's sources and says so", async () => {
    const program = extract("host-b");
    fs.writeFileSync(path.join(path.dirname(program), "native", "build", "meshtrain_native.node"), "not a shared object");
    const w = await start(program);
    const c = await cluster().connect([w.url]).token(TOKEN).launch();
    try {
      assert.equal(c.workers[0]!.info.backend, "native");
      assert.match(w.output(), /prebuilt native addon does not load on this host; building it here[\s\S]*built the native addon on this host/);
    } finally {
      await c.close();
    }
  });

  test("--with-node: Node itself inside (40 MiB, under 55), and ./meshtrain-worker runs the worker on it, not on the host's", async () => {
    const withNode = path.join(tmp, "with-node.tar.gz");
    const r = spawnSync(process.execPath, [CLI, "bundle", "--with-node", "--out", withNode], { encoding: "utf8", cwd: tmp, env: cliEnv(), timeout: 600_000 });
    assert.equal(r.status, 0, `meshtrain bundle --with-node failed:\n${r.stdout}\n${r.stderr}`);
    assert.ok(fs.statSync(withNode).size < 55 * 2 ** 20, r.stdout);
    assert.match(r.stdout, /on any host of this platform \(Node is inside\): tar -xzf with-node\.tar\.gz && meshtrain-worker-[\d.]+\/meshtrain-worker --join/);
    const host = path.join(tmp, "host-e");
    fs.mkdirSync(host);
    assert.equal(spawnSync("tar", ["-xzf", withNode, "-C", host]).status, 0);
    const start = path.join(host, fs.readdirSync(host)[0]!, "meshtrain-worker");
    const child = spawn(start, ["--port", "0"], { cwd: tmp, env: { PATH: "/usr/bin:/bin", HOME: tmp, MESHTRAIN_TOKEN: TOKEN }, stdio: ["ignore", "pipe", "pipe"] });
    try {
      const m = await watchOutput(child).match(/listening on (ws:\/\/\S+) \(pid (\d+)\)/, 60_000, "the worker started by ./meshtrain-worker");
      assert.equal(fs.readlinkSync(`/proc/${m[2]}/exe`), path.join(path.dirname(start), "node", "bin", "node"));
      const c = await cluster().connect([m[1]!]).token(TOKEN).launch();
      await c.close();
    } finally {
      child.kill("SIGKILL");
    }
  });

  test("--backends native,webgpu: Dawn for this platform inside, no wasm; its devices list the software adapter, its bench runs, and its GPU worker trains with a native one to model.fit's result", async () => {
    const withDawn = path.join(tmp, "with-dawn.tar.gz");
    const r = spawnSync(process.execPath, [CLI, "bundle", "--backends", "native,webgpu", "--out", withDawn], { encoding: "utf8", cwd: tmp, env: cliEnv(), timeout: 600_000 });
    assert.equal(r.status, 0, `meshtrain bundle --backends native,webgpu failed:\n${r.stdout}\n${r.stderr}`);
    assert.ok(fs.statSync(withDawn).size < 55 * 2 ** 20, r.stdout);
    const listed = spawnSync("tar", ["-tzf", withDawn], { encoding: "utf8" }).stdout;
    assert.match(listed, /\/node_modules\/webgpu\/dist\/linux-x64\/dawn\.node$/m);
    assert.doesNotMatch(listed, /dist\/(darwin|win32)|\.wasm$/m, "other platforms' Dawn, or wasm not asked for");
    const host = path.join(tmp, "host-f");
    fs.mkdirSync(host);
    assert.equal(spawnSync("tar", ["-xzf", withDawn, "-C", host]).status, 0);
    const program = path.join(host, fs.readdirSync(host)[0]!, "meshtrain-worker.js");
    const devices = spawnSync(process.execPath, [program, "devices"], { encoding: "utf8", cwd: tmp, env: { PATH: process.env.PATH, HOME: tmp }, timeout: 120_000 });
    assert.match(devices.stdout, /WebGPU adapters \(Dawn\): \n {2}0: SwiftShader Device \(Subzero\): software GPU/, devices.stdout + devices.stderr);
    assert.match(devices.stdout, /wasm: not available/, "no wasm binaries in this bundle");
    // bench:gpu from the bundle alone, run from an empty folder: its rows, the GPU's ratio to the CPU worker, a results file there.
    const runIn = path.join(tmp, "bench-here");
    fs.mkdirSync(runIn);
    const bench = spawnSync(process.execPath, [program, "bench", "--quick"], { encoding: "utf8", cwd: runIn, env: { PATH: process.env.PATH, HOME: tmp }, timeout: 300_000 });
    assert.equal(bench.status, 0, bench.stdout + bench.stderr);
    for (const row of [/\| mlp native, 1 process \| cpu \| \d+ \|/, /\| mlp webgpu, 1 process \| webgpu: SwiftShader Device \(Subzero\) \(software GPU[^|]*\| \d+ \| [\d.]+ \|/, /\| mlp webgpu, 2 workers \| webgpu: SwiftShader[^|]*\| \d+ \| [\d.]+ \| [\d.]+ \|/])
      assert.match(bench.stdout, row);
    assert.match(bench.stdout, /WebGPU over the native CPU worker, samples\/s, 1 process each: MLP [\d.]+x \(a software adapter: not a GPU's figure\)/);
    assert.match(bench.stdout, /Command: `node meshtrain-worker\.js bench`/);
    assert.ok(fs.existsSync(path.join(runIn, "meshtrain-bench-results", "quick", "gpu.json")), bench.stdout);
    const gpu = await start(program, ["--backend", "webgpu"]);
    const cpu = await start(program);
    const c = await cluster().connect([gpu.url, cpu.url]).token(TOKEN).launch();
    try {
      assert.deepEqual(c.workers.map((w) => w.info.backend), ["webgpu", "native"]);
      await fitsLikeModelFit(c, { size: 48, seed: 5 });
    } finally {
      await c.close();
    }
  });

  test("a bundle of another meshtrain version is refused at the handshake, naming both versions", async () => {
    const program = extract("host-c");
    const text = fs.readFileSync(program, "utf8");
    assert.match(text, /VERSION = "\d+\.\d+\.\d+"/);
    fs.writeFileSync(program, text.replace(/VERSION = "\d+\.\d+\.\d+"/, 'VERSION = "0.0.9"'));
    const w = await start(program);
    await assert.rejects(cluster().connect([w.url]).token(TOKEN).timeouts({ connectMs: 10_000 }).launch(), (e: unknown) => {
      assert.ok(e instanceof ProtocolError, String(e));
      assert.match((e as Error).message, /worker rank 0 at ws:\/\/127\.0\.0\.1:\d+ runs meshtrain 0\.0\.9, this driver runs \d+\.\d+\.\d+/);
      return true;
    });
  });
});
