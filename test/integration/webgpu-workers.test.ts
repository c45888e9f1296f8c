import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test, type TestContext } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type Cluster } from "../../sdk/index";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import { deepClassifier, maxRelativeDifference, smallClassifier, weightsMoved } from "../helpers/models";
import { CLI, isAlive, startCliWorker, waitFor } from "../helpers/processes";
import { modelFitReference } from "../helpers/reference";
import { slicedReference } from "../helpers/sliced-reference";

/**
 * GPU workers for real: WebGPU through Dawn in worker processes, on the software adapter this
 * machine has (SwiftShader, from Debian's chromium package: a CPU rasteriser that runs the same
 * WebGPU shaders a GPU would). Every strategy's result is compared with single-process model.fit
 * on the cpu backend in this process.
 *
 * The tolerance is 1e-4 relative (per weight tensor, L2): a GPU's kernels sum in another order
 * than the cpu backend's (tiled, parallel reductions in matrix products and means), so each
 * float32 sum differs in its last bits, around 1e-7 relative; over a few steps of SGD or Adam
 * these stay near 1e-6 (the runs report what they measured). 1e-4 is the bar every CPU strategy
 * test uses: far above float32 reordering, far below any real error (a wrong slice, a missed
 * update or a lost state change moves weights by 1e-2 or more). Tensors are compared relative to
 * their norm or 1, whichever is larger: a bias feeding BatchNormalization has a zero gradient in
 * exact arithmetic, so its values are rounding noise, summed in a different order on each backend.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;
const SGD: OptimizerSpec = { name: "sgd", learningRate: 0.1 };
const ADAM: OptimizerSpec = { name: "adam", learningRate: 0.01, beta1: 0.9, beta2: 0.999 };
const ICD = "/usr/lib/chromium/vk_swiftshader_icd.json";

function close(t: TestContext, a: tf.LayersModel, b: tf.LayersModel): void {
  const diff = maxRelativeDifference(a, b, 1);
  t.diagnostic(`largest relative difference from the one-process reference: ${diff.toExponential(2)}`);
  assert.ok(diff < TOLERANCE, `relative difference ${diff} >= ${TOLERANCE}`);
}

async function equalsModelFit(t: TestContext, c: Cluster, optimizer: OptimizerSpec, make = () => smallClassifier(6, 3), batchSize = 16): Promise<void> {
  const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 40, seed: 11 });
  const o = { epochs: 1, batchSize, seed: 4 };
  const [gpu, ref] = [make(), make()];
  const start = gpu.getWeights().map((w) => w.clone());
  await c.fit(gpu, ds, { ...o, optimizer, loss: "categoricalCrossentropy", progress: false });
  await modelFitReference(ref, ds, { ...o, optimizer });
  assert.ok(weightsMoved(start, gpu), "training changed the weights");
  close(t, gpu, ref);
}

test("this machine has a software WebGPU adapter for these tests (SwiftShader from Debian's chromium)", () => {
  assert.ok(fs.existsSync(ICD), `no SwiftShader Vulkan driver at ${ICD}: install it with apt-get install chromium (.ci/run does)`);
  const r = spawnSync(process.execPath, [CLI, "devices"], { encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /WebGPU adapters \(Dawn\): \n {2}0: SwiftShader Device \(Subzero\): software GPU/, r.stdout);
});

test("gpus(n) without GPUs fails at launch naming what it found, unless software or fallback is asked for", async () => {
  await assert.rejects(cluster().gpus(2).launch(), (e: Error) => /gpus\(2\) asks for 2 GPU\(s\); this machine has none meshtrain can use \(.*software adapter "SwiftShader Device \(Subzero\)", taken only with \{ software: true \}\)/.test(e.message));
  const c = await cluster().gpus(1, { fallback: "cpu" }).launch();
  try {
    assert.equal(c.workers[0]!.info.gpu, undefined);
    assert.ok(c.notes.some((n) => /starting 1 CPU worker\(s\) instead/.test(n)), c.notes.join("\n"));
  } finally {
    await c.close();
  }
});

/**
 * One cluster of two webgpu workers, each given its own adapter, serves the data-parallel tests:
 * a webgpu worker takes seconds to start on the software adapter, so they share one launch.
 * Hybrid and async parameter servers run the same device code as these (a pipeline stage's
 * forward and backward, a replica's step and readback) and are tested on CPU workers.
 */
describe("the strategies' roles on webgpu workers (software adapter)", () => {
  let data: Cluster;
  let manifests: string[] = [];
  const icdDir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-icd-"));
  before(async () => {
    // Two manifests of one software driver make the Vulkan loader list two adapters, as two GPUs' drivers would.
    manifests = ["a", "b"].map((n) => {
      const f = path.join(icdDir, `${n}.json`);
      fs.writeFileSync(f, JSON.stringify({ file_format_version: "1.0.0", ICD: { library_path: "/usr/lib/chromium/libvk_swiftshader.so", api_version: "1.0.5" } }));
      return f;
    });
    const saved = process.env.VK_ICD_FILENAMES;
    process.env.VK_ICD_FILENAMES = manifests.join(":");
    try {
      data = await cluster().gpus(2, { software: true }).strategy("data").launch();
    } finally {
      if (saved === undefined) delete process.env.VK_ICD_FILENAMES;
      else process.env.VK_ICD_FILENAMES = saved;
    }
  });
  after(async () => {
    await data?.close();
    fs.rmSync(icdDir, { recursive: true, force: true });
  });

  test("two adapters from two drivers: each worker gets its own, and the plan names them and prices their transfers", () => {
    assert.deepEqual(data.workers.map((w) => w.info.gpu?.driver), manifests, "each worker sees its own driver");
    for (const w of data.workers) {
      assert.equal(w.info.backend, "webgpu");
      assert.match(w.info.device, /^webgpu: SwiftShader Device \(Subzero\) \(software GPU/);
      assert.ok(w.info.notes.some((n) => /^software GPU:/.test(n)), w.info.notes.join("; "));
    }
    assert.ok(!data.notes.some((n) => /serves the others/.test(n)), "two adapters for two workers: none shared");
    // The plan names the GPUs and prices each step's readback and upload at the rate each worker measured.
    assert.ok(data.workers.every((w) => (w.info.gpu?.transferBytesPerSecond ?? 0) > 0), "each GPU worker measured its transfers");
    assert.match(String(data.plan(smallClassifier(6, 3), { batchSize: 32 })), /GPU workers: rank 0 SwiftShader Device \(Subzero\) \(software GPU\), rank 1 .*; each step reads its gradient back and uploads the sum once, about [\d.]+ ms at the [\d.]+ GB\/s measured/);
  });

  test("data parallelism with Adam equals model.fit; the step reads back once and uploads once, and says how long", async (t) => {
    await equalsModelFit(t, data, ADAM);
    const run = await data.fit(smallClassifier(6, 3), datasets.synthetic({ inputShape: [6], classes: 3, size: 32, seed: 1 }), { batchSize: 16, progress: false });
    for (const w of run.history.at(-1)!.workers) {
      assert.ok(w.readbackMs !== undefined && w.readbackMs > 0, `rank ${w.rank} reported its readback`);
      assert.ok(w.uploadMs !== undefined, `rank ${w.rank} reported its upload`);
    }
  });

  test("BatchNormalization's statistics and NaN steps on the GPU as on the CPU", async (t) => {
    const make = (): tf.LayersModel => tf.sequential({ layers: [tf.layers.dense({ units: 8, inputShape: [6], kernelInitializer: tf.initializers.glorotUniform({ seed: 3 }) }), tf.layers.batchNormalization({ momentum: 0.8 }), tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 4 }) })] });
    const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 32, seed: 5 });
    const [gpu, ref] = [make(), make()];
    await data.fit(gpu, ds, { epochs: 1, batchSize: 16, seed: 2, optimizer: SGD, loss: "categoricalCrossentropy", progress: false });
    slicedReference(ref, ds, { epochs: 1, batchSize: 16, seed: 2, optimizer: SGD, loss: "categoricalCrossentropy", replicas: 2 });
    close(t, gpu, ref);
    const poisoned = datasets.synthetic({ inputShape: [6], classes: 3, size: 32, seed: 5 });
    (poisoned.x.data as Float32Array)[3] = NaN;
    await assert.rejects(data.fit(make(), poisoned, { batchSize: 16, shuffle: false, progress: false }), /MT_ERR_NON_FINITE|NaN|Infinity/);
  });

  test("sync parameter servers with webgpu workers equal model.fit", async (t) => {
    const sync = await cluster().gpus(2, { software: true }).ps(1).strategy("ps", { mode: "sync" }).launch();
    try {
      await equalsModelFit(t, sync, ADAM);
    } finally {
      await sync.close();
    }
  });

  test("model parallelism and a 2-stage pipeline on webgpu workers equal model.fit", async (t) => {
    for (const strategy of [cluster().strategy("model"), cluster().strategy("pipeline", { microBatches: 2 })]) {
      const c = await strategy.gpus(2, { software: true }).launch();
      try {
        await equalsModelFit(t, c, ADAM, () => deepClassifier(6, 3, { hidden: 2 }));
      } finally {
        await c.close();
      }
    }
  });

  test("a checkpoint written on webgpu workers resumes to the uninterrupted fit's weights", async (t) => {
    const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 64, seed: 7 });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-gpu-ckpt-"));
    const o = { epochs: 1, batchSize: 16, seed: 3, optimizer: ADAM, loss: "categoricalCrossentropy" as const, progress: false };
    const whole = smallClassifier(6, 3);
    await data.fit(whole, ds, o);
    const part = smallClassifier(6, 3);
    await assert.rejects(data.fit(part, ds, { ...o, checkpoint: { dir, every: 2 }, onStep: (s) => { if (s.step === 2) throw new Error("stop here"); } }), /stop here/);
    const resumed = smallClassifier(6, 3);
    await data.fit(resumed, ds, { ...o, checkpoint: { dir, every: 2 }, resumeFrom: dir });
    close(t, resumed, whole);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

test("a mixed cluster: webgpu workers started elsewhere (--gpu 0 --software, --backend webgpu) and a native one train together as model.fit", async (t) => {
  const token = "webgpu-mixed-test-token-0123456789";
  const byIndex = await startCliWorker(token, ["--gpu", "0", "--software"]);
  const byName = await startCliWorker(token, ["--backend", "webgpu"]);
  const cpu = await startCliWorker(token);
  try {
    const c = await cluster().connect([byIndex.url, byName.url, cpu.url]).token(token).launch();
    try {
      assert.deepEqual(c.workers.map((w) => w.info.backend), ["webgpu", "webgpu", "native"]);
      assert.ok(c.workers[0]!.info.gpu?.software && c.workers[0]!.info.gpu.driver, "--gpu 0 gave the worker its adapter's driver");
      await equalsModelFit(t, c, SGD, undefined, 12);
    } finally {
      await c.close();
    }
  } finally {
    for (const w of [byIndex, byName, cpu]) await w.stop();
  }
  // --gpu and --backend start the worker again with its device's environment: killing the
  // process one started (SIGKILL, not passed on) ends the worker too.
  const served = [byIndex, byName].map((w) => Number(/\(pid (\d+)\)/.exec(w.output())?.[1]));
  assert.ok(served.every((pid, i) => pid > 0 && pid !== [byIndex, byName][i]!.child.pid), `the serving pids: ${served.join(", ")}`);
  await waitFor(`the started-again workers (pids ${served.join(", ")}) to end with the processes that started them`, () => !served.some(isAlive), 10_000);
});

test("held-out MNIST accuracy of 2 webgpu workers is within one point of model.fit's", async (t) => {
  const train = datasets.mnist({ split: "train", limit: 640 });
  const testSet = datasets.mnist({ split: "test", limit: 400 }).toTensors();
  const make = (): tf.LayersModel => tf.sequential({ layers: [tf.layers.flatten({ inputShape: [28, 28, 1] }), tf.layers.dense({ units: 32, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: 1 }) }), tf.layers.dense({ units: 10, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 2 }) })] });
  const accuracy = (m: tf.LayersModel): number => tf.tidy(() => (tf.metrics.categoricalAccuracy(testSet.y, m.predict(testSet.x) as tf.Tensor).mean().dataSync()[0]!));
  // One epoch of 20 steps: on the software adapter each step takes seconds, and the check is the same.
  const o = { epochs: 1, batchSize: 32, seed: 9, optimizer: ADAM };
  const ref = make();
  await modelFitReference(ref, train, o);
  const c = await cluster().gpus(2, { software: true }).launch();
  try {
    const gpu = make();
    await c.fit(gpu, train, { ...o, loss: "categoricalCrossentropy", progress: false });
    const [a, b] = [accuracy(gpu), accuracy(ref)];
    t.diagnostic(`held-out accuracy: webgpu workers ${(a * 100).toFixed(1)}%, model.fit ${(b * 100).toFixed(1)}%`);
    assert.ok(Math.abs(a - b) <= 0.01, `${a} vs ${b}`);
  } finally {
    await c.close();
    tf.dispose([testSet.x, testSet.y]);
  }
});
