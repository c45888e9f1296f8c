import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, ConfigError, datasets, type FitOptions } from "../../sdk/index";
import { maxRelativeDifference, smallClassifier } from "../helpers/models";
import { modelFitReference } from "../helpers/reference";

/**
 * strategy("data", { shard: "optimizer" }) (ZeRO-1) on real workers and rings: each replica
 * keeps the optimizer state of its shard of the flat parameters (shards split tensors: the
 * classifier has 83 parameters), the gradient is reduce-scattered and the weights
 * all-gathered. Each shard is summed in the all-reduce's order and every optimizer is
 * elementwise, so it equals plain data parallelism to the bit, and model.fit to 1e-4.
 */

tf.enableProdMode();
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 60, seed: 61 });
const base = { epochs: 2, batchSize: 12, seed: 3, loss: "categoricalCrossentropy" as const };

async function trained(workers: number, o: FitOptions, options: { shard?: "optimizer"; compression?: "fp16"; plane?: "websocket" }): Promise<tf.LayersModel> {
  const c = await cluster()
    .workers(workers)
    .strategy("data", { ...(options.shard ? { shard: options.shard } : {}), ...(options.compression ? { compression: options.compression } : {}) })
    .dataPlane(options.plane ?? "auto")
    .launch();
  try {
    if (options.shard) assert.match(c.plan(smallClassifier(6, 3), { batchSize: 12, optimizer: o.optimizer }).toString(), new RegExp(`shard "optimizer" \\(ZeRO-1\\): each replica keeps its shard's optimizer state .* of .*\\): the gradient is reduce-scattered`));
    const model = smallClassifier(6, 3);
    const run = await c.fit(model, ds, o);
    // Every worker measured its memory during the fit, from the kernel's high-water mark.
    assert.deepEqual(run.memory.map((m) => [m.rank, m.peakFrom]), Array.from({ length: workers }, (_, r) => [r, "kernel"]));
    for (const m of run.memory) assert.ok(m.peakRssBytes >= m.idleRssBytes && m.tensorBytes >= model.countParams() * 4, JSON.stringify(m));
    assert.equal(run.notes.filter((l) => / memory: peak resident set .* the plan estimated /.test(l)).length, workers);
    return model;
  } finally {
    await c.close();
  }
}

test("ZeRO-1 with Adam on 3 workers (native data plane) equals plain data parallelism to the bit, and model.fit", async (t) => {
  const o = { ...base, optimizer: { name: "adam" as const, learningRate: 0.01, beta1: 0.9, beta2: 0.999 } };
  const sharded = await trained(3, o, { shard: "optimizer" });
  const plain = await trained(3, o, {});
  assert.equal(maxRelativeDifference(sharded, plain), 0, "the same bits as the all-reduce's step");
  const ref = smallClassifier(6, 3);
  await modelFitReference(ref, ds, o);
  const diff = maxRelativeDifference(sharded, ref);
  t.diagnostic(`ZeRO-1, Adam, 3 workers vs model.fit: ${diff.toExponential(2)}`);
  assert.ok(diff < 1e-4, `relative difference ${diff}`);
});

test("ZeRO-1 over the WebSocket links: fp16 gradients equal plain fp16 data parallelism to the bit (momentum, 2 workers); RMSprop on 4 equals model.fit", async (t) => {
  const momentum = { ...base, optimizer: { name: "momentum" as const, learningRate: 0.1, momentum: 0.9 } };
  const half = await trained(2, momentum, { shard: "optimizer", compression: "fp16", plane: "websocket" });
  const plainHalf = await trained(2, momentum, { compression: "fp16", plane: "websocket" });
  assert.equal(maxRelativeDifference(half, plainHalf), 0);
  const rms = { ...base, optimizer: { name: "rmsprop" as const, learningRate: 0.01, decay: 0.9, momentum: 0.5, centered: false } };
  const four = await trained(4, rms, { shard: "optimizer", plane: "websocket" });
  const ref = smallClassifier(6, 3);
  await modelFitReference(ref, ds, rms);
  const diff = maxRelativeDifference(four, ref);
  t.diagnostic(`ZeRO-1, RMSprop with momentum, 4 workers over WebSockets vs model.fit: ${diff.toExponential(2)}`);
  assert.ok(diff < 1e-4, `relative difference ${diff}`);
});

test("what ZeRO-1 cannot do yet is refused, saying why", async () => {
  const refused = (options: Parameters<ReturnType<typeof cluster>["strategy"]>[1], why: RegExp) =>
    assert.throws(() => cluster().workers(2).strategy("data", options as never).spec(), (e: unknown) => e instanceof ConfigError && why.test(e.message));
  refused({ shard: "optimizer", elastic: { minWorkers: 1 } }, /re-sharding the optimizer state is not built/);
  refused({ shard: "optimizer", sync: { every: 2 } }, /inner optimizer state for the whole model/);
  refused({ shard: "optimizer", compression: { name: "powersgd", rank: 2 } }, /low-rank factors/);
  const c = await cluster().workers(2).strategy("data", { shard: "optimizer" }).backend("cpu").launch();
  try {
    await assert.rejects(c.fit(smallClassifier(6, 3), ds, { ...base, optimizer: { name: "sgd", learningRate: 0.1 }, checkpoint: { dir: "/tmp/meshtrain-zero-ckpt", every: 1 } }), /sharded checkpoints are not built yet/);
  } finally {
    await c.close();
  }
});

test("under a memory cap, a replica's check at load counts its share of the optimizer's state: ZeRO-1 loads a model plain data parallelism cannot", async () => {
  // 70,003 parameters with Adam: 16 bytes each whole (1.07 MiB) is above the 1 MiB cap, 12 (4 + 4 + 8 / 2) fits.
  const wide = (): tf.LayersModel => tf.sequential({ layers: [tf.layers.dense({ inputShape: [6], units: 7000, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: 5 }) }), tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 6 }) })] });
  const o = { ...base, epochs: 1, batchSize: 2, optimizer: { name: "adam" as const, learningRate: 0.01, beta1: 0.9, beta2: 0.999 } };
  const fitCapped = async (shard: boolean): Promise<tf.LayersModel> => {
    const c = await cluster().workers(2).memory("1MiB").strategy("data", shard ? { shard: "optimizer" } : {}).launch();
    try {
      const model = wide();
      await c.fit(model, datasets.synthetic({ inputShape: [6], classes: 3, size: 8, seed: 61 }), o);
      return model;
    } finally {
      await c.close();
    }
  };
  await assert.rejects(fitCapped(false), /above this worker's memory cap of 1\.0 MiB/);
  const sharded = await fitCapped(true);
  const ref = wide();
  await modelFitReference(ref, datasets.synthetic({ inputShape: [6], classes: 3, size: 8, seed: 61 }), o);
  assert.ok(maxRelativeDifference(sharded, ref) < 1e-4);
});
