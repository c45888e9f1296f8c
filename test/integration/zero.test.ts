import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, ConfigError, datasets, type FitOptions } from "../../sdk/index";
import { deepClassifier, maxRelativeDifference, smallClassifier, smallConvNet } from "../helpers/models";
import { modelFitReference } from "../helpers/reference";
import { nativeAvailable } from "../helpers/backends";
import { TEST_HEARTBEAT } from "../helpers/heartbeat";

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

async function trained(workers: number, o: FitOptions, options: { shard?: "optimizer" | "gradients" | "parameters"; compression?: "fp16"; plane?: "websocket"; bucketMB?: number; overlap?: true }, make: () => tf.LayersModel = () => smallClassifier(6, 3), data = ds): Promise<tf.LayersModel> {
  const c = await cluster()
    .workers(workers)
    .strategy("data", { ...(options.shard ? { shard: options.shard } : {}), ...(options.compression ? { compression: options.compression } : {}), ...(options.bucketMB !== undefined ? { bucketMB: options.bucketMB } : {}), ...(options.overlap ? { overlap: true } : {}) })
    .dataPlane(options.plane ?? "auto")
    .launch();
  try {
    if (options.shard === "optimizer") assert.match(c.plan(make(), { batchSize: 12, optimizer: o.optimizer }).toString(), new RegExp(`shard "optimizer" \\(ZeRO-1\\): each replica keeps its shard's optimizer state .* of .*\\): the gradient is reduce-scattered`));
    if (options.shard === "gradients") assert.match(c.plan(make(), { batchSize: 12, optimizer: o.optimizer }).toString(), /shard "gradients" \(ZeRO-2\): each replica keeps the whole weights and 1\/\d of every layer's gradient and optimizer state/);
    if (options.shard === "parameters") assert.match(c.plan(make(), { batchSize: 12, optimizer: o.optimizer }).toString(), /shard "parameters" \(ZeRO-3\): each replica keeps 1\/\d of every layer's weights, gradient and optimizer state/);
    const model = make();
    const run = await c.fit(model, data, o);
    if (options.overlap) assert.ok(run.notes.some((l) => /^overlap: ZeRO-\d's .*asked for with overlap: true/.test(l)), run.notes.join("\n"));
    if (options.shard === "gradients" || options.shard === "parameters") {
      // Each step reports each bucket's collectives, which the timeline draws: ZeRO-3 gathers each bucket twice but the last.
      const u = run.plan.strategy === "data" ? run.plan.buckets!.count : NaN;
      const collectives = run.history[1]!.workers[0]!.collectives ?? [];
      const kinds = collectives.map((c) => c.kind);
      // The reduce-scatters run from the output back, bucket by bucket, naming each layer with weights once.
      const named = collectives.filter((c) => c.kind === "reduce-scatter").flatMap((c) => Array.from({ length: (c.last ?? c.layer) - c.layer + 1 }, (_, i) => (c.last ?? c.layer) - i));
      assert.deepEqual(named, Array.from({ length: model.layers.filter((l) => l.countParams() > 0).length }, (_, i) => i).reverse());
      // With overlap ZeRO-3's backward pass starts gathering the next bucket before the last one's reduce-scatter: they finish in that order.
      if (options.shard === "parameters" && u > 1) assert.equal(kinds[u], options.overlap ? "all-gather" : "reduce-scatter", kinds.join(" "));
      assert.deepEqual([kinds.filter((k) => k === "all-gather").length, kinds.filter((k) => k === "reduce-scatter").length], [options.shard === "parameters" ? 2 * u - 1 : u, u]);
    }
    // Every worker measured its memory during the fit, from the kernel's high-water mark.
    assert.deepEqual(run.memory.map((m) => [m.rank, m.peakFrom]), Array.from({ length: workers }, (_, r) => [r, "kernel"]));
    // (A process can hold less at its peak than when it joined: what its start left behind may be given back since.)
    for (const m of run.memory) assert.ok(m.idleRssBytes > 2 ** 24 && m.peakRssBytes > 2 ** 24 && m.tensorBytes >= model.countParams() * 4, JSON.stringify(m));
    assert.equal(run.notes.filter((l) => / memory: peak resident set .* the plan estimated /.test(l)).length, workers);
    return model;
  } finally {
    await c.close();
  }
}

test("ZeRO-1 with Adam on 3 workers (native data plane) equals plain data parallelism to the bit, and model.fit; so does ZeRO-2 whose one bucket holds the whole model", async (t) => {
  const o = { ...base, optimizer: { name: "adam" as const, learningRate: 0.01, beta1: 0.9, beta2: 0.999 } };
  const sharded = await trained(3, o, { shard: "optimizer" });
  const plain = await trained(3, o, {});
  assert.equal(maxRelativeDifference(sharded, plain), 0, "the same bits as the all-reduce's step");
  // ZeRO-2's default bucket (25 MiB) takes both layers: its one reduce-scatter splits the gradient as ZeRO-1's does.
  const two = await trained(3, o, { shard: "gradients" });
  assert.equal(maxRelativeDifference(two, sharded), 0, "ZeRO-2 in one bucket: the same bits as ZeRO-1");
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

test("ZeRO-2 and ZeRO-3 (each layer's gradient reduce-scattered; ZeRO-3 gathers each layer for its passes, and for validation) equal each other to the bit and model.fit: Adam on 3 workers over the native data plane, a CNN on 2 over WebSockets", async (t) => {
  const adam = { ...base, optimizer: { name: "adam" as const, learningRate: 0.01, beta1: 0.9, beta2: 0.999 } };
  // Both validate each epoch (which changes nothing trained): ZeRO-2 on its whole weights, ZeRO-3 layer by
  // layer, gathered; 37 samples in shards of 13, 12 and 12 take 2 batches of 12 on one replica, 1 on the others.
  const validation = datasets.synthetic({ inputShape: [6], classes: 3, size: 37, seed: 64 });
  const validated: Record<"two" | "three", number[]> = { two: [], three: [] };
  const validating = (k: "two" | "three") => ({ ...adam, validationData: validation, callbacks: { onEpochEnd: async (_e: number, logs?: Record<string, number>) => void validated[k].push(Number(logs?.val_loss)) } });
  const three = await trained(3, validating("three"), { shard: "parameters", bucketMB: 0 });
  const two = await trained(3, validating("two"), { shard: "gradients", bucketMB: 0 });
  // Each layer a bucket in both: the same reduce-scatters in the same order, the same elementwise update: the same bits.
  assert.equal(maxRelativeDifference(two, three), 0);
  assert.equal(validated.three.length, base.epochs);
  for (const [i, v] of validated.three.entries()) assert.ok(Math.abs(v - validated.two[i]!) <= 1e-6 * v, `epoch ${i}: ZeRO-3 val_loss ${v}, ZeRO-2 ${validated.two[i]}`);
  const ref = smallClassifier(6, 3);
  await modelFitReference(ref, ds, adam);
  const diff = maxRelativeDifference(three, ref);
  t.diagnostic(`ZeRO-3 (and ZeRO-2), Adam, 3 workers vs model.fit: ${diff.toExponential(2)}`);
  assert.ok(diff < 1e-4, `relative difference ${diff}`);
  const held = validation.toTensors();
  const evaluated = ref.evaluate(held.x, held.y, { batchSize: 12 }) as tf.Scalar;
  const expected = (await evaluated.data())[0]!;
  t.diagnostic(`ZeRO-3's last val_loss ${validated.three[base.epochs - 1]}, model.evaluate after model.fit ${expected}`);
  assert.ok(Math.abs(validated.three[base.epochs - 1]! - expected) <= 1e-5 * expected);
  // Convolutions write their filters' gradients into a layer's own buffer.
  const images = datasets.synthetic({ inputShape: [8, 8, 1], classes: 3, size: 24, seed: 62 });
  const momentum = { ...base, batchSize: 8, optimizer: { name: "momentum" as const, learningRate: 0.05, momentum: 0.9, useNesterov: false } };
  const cnn = await trained(2, momentum, { shard: "parameters", plane: "websocket" }, () => smallConvNet(3), images);
  const cnnRef = smallConvNet(3);
  await modelFitReference(cnnRef, images, momentum);
  const cnnDiff = maxRelativeDifference(cnn, cnnRef);
  t.diagnostic(`ZeRO-3, CNN with momentum, 2 workers over WebSockets vs model.fit: ${cnnDiff.toExponential(2)}`);
  assert.ok(cnnDiff < 1e-4, `relative difference ${cnnDiff}`);
});

test("ZeRO-2 and ZeRO-3 with buckets of layers: 5 layers in buckets of 1, 2 and 2 layers (a shard boundary inside a bucket's tensors), each bucket's collectives one, equal to each other to the bit and to model.fit, with and without overlap: Adam on 3 workers", async (t) => {
  const adam = { ...base, optimizer: { name: "adam" as const, learningRate: 0.01, beta1: 0.9, beta2: 0.999 } };
  const make = () => deepClassifier(6, 3);
  // Layers of 224, 288, 288, 288 and 108 bytes, filled from the output back up to 600 bytes: [0], [1, 2], [3, 4].
  const bucketMB = 600 / 2 ** 20;
  const plan = cluster().workers(3).strategy("data", { shard: "gradients", bucketMB }).plan(make(), { batchSize: 12, optimizer: adam.optimizer });
  assert.deepEqual(plan.strategy === "data" ? plan.buckets : null, { capBytes: 600, count: 3, largestBytes: 576 });
  assert.match(plan.toString(), /its 5 layers in 3 buckets of consecutive layers \(bucketMB 0\.001; the largest 576 B\), each bucket's gradient reduce-scattered/);
  const three = await trained(3, adam, { shard: "parameters", bucketMB }, make);
  const two = await trained(3, adam, { shard: "gradients", bucketMB }, make);
  assert.equal(maxRelativeDifference(two, three), 0);
  // With overlap ZeRO-3 gathers the next bucket ahead and both reduce-scatter a bucket while the next computes: the same collectives, in the same order.
  assert.equal(maxRelativeDifference(await trained(3, adam, { shard: "parameters", bucketMB, overlap: true }, make), three), 0, "ZeRO-3 with overlap");
  assert.equal(maxRelativeDifference(await trained(3, adam, { shard: "gradients", bucketMB, overlap: true }, make), three), 0, "ZeRO-2 with overlap");
  const ref = make();
  await modelFitReference(ref, ds, adam);
  const diff = maxRelativeDifference(two, ref);
  t.diagnostic(`ZeRO-2 (and ZeRO-3) in buckets of layers, Adam, 3 workers vs model.fit: ${diff.toExponential(2)}`);
  assert.ok(diff < 1e-4, `relative difference ${diff}`);
});

test("ZeRO-2 and ZeRO-3 with fp16: each layer's gradient reduce-scattered in 16 bits with error feedback, the two (ZeRO-2 over the WebSocket links) equal to the bit and model.fit to fp16's tolerance", async (t) => {
  const momentum = { ...base, optimizer: { name: "momentum" as const, learningRate: 0.1, momentum: 0.9, useNesterov: false } };
  const three = await trained(2, momentum, { shard: "parameters", compression: "fp16" });
  // ZeRO-2 over the WebSocket links: each layer's weights gathered through the communication thread come back in another buffer, which its variables then view.
  const two = await trained(2, momentum, { shard: "gradients", compression: "fp16", plane: "websocket", bucketMB: 0 });
  assert.equal(maxRelativeDifference(two, three), 0);
  // Overlapped over the WebSocket links: the communication thread runs the gathers and reduce-scatters one after another, as started.
  assert.equal(maxRelativeDifference(await trained(2, momentum, { shard: "parameters", compression: "fp16", plane: "websocket", overlap: true, bucketMB: 0 }), three), 0, "ZeRO-3 a layer a bucket with overlap over WebSockets");
  const ref = smallClassifier(6, 3);
  await modelFitReference(ref, ds, momentum);
  const diff = maxRelativeDifference(three, ref);
  t.diagnostic(`ZeRO-3 (and ZeRO-2) fp16, momentum, 2 workers vs model.fit: ${diff.toExponential(2)}`);
  // Rounded to 16 bits, it cannot be as close as float32 gets (1.6e-7), and stays within the compression tests' bound.
  assert.ok(diff > 1e-6 && diff < 2e-3, `relative difference ${diff}`);
});

test("ZeRO-3 with accumulate 3 x batchSize 4 on 2 workers (chunks uneven and empty, each chunk's reduce-scatters adding up) equals model.fit at batch 12", async (t) => {
  // 29 samples: updates of 12, 12 and 5; the last gives the replicas 3 and 2 samples, in chunks of 1, 1, 1 and 1, 1, 0.
  const data = datasets.synthetic({ inputShape: [6], classes: 3, size: 29, seed: 41 });
  const o = { epochs: 2, seed: 6, loss: "categoricalCrossentropy" as const, optimizer: { name: "adam" as const, learningRate: 0.02, beta1: 0.9, beta2: 0.999 } };
  const c = await cluster().workers(2).strategy("data", { shard: "parameters" }).launch();
  const model = smallClassifier(6, 3);
  // Compiled with a metric: each chunk's accuracy, weighted by its samples.
  model.compile({ optimizer: tf.train.adam(0.02), loss: "categoricalCrossentropy", metrics: ["accuracy"] });
  try {
    const run = await c.fit(model, data, { ...o, batchSize: 4, accumulate: 3 });
    assert.deepEqual(run.history.map((s) => s.samples), [12, 12, 5, 12, 12, 5]);
    const ref = smallClassifier(6, 3);
    const losses = await modelFitReference(ref, data, { ...o, batchSize: 12 });
    const diff = maxRelativeDifference(model, ref);
    t.diagnostic(`ZeRO-3, accumulate 3, 2 workers vs model.fit at batch 12: ${diff.toExponential(2)}`);
    assert.ok(diff < 1e-4, `relative difference ${diff}`);
    run.history.forEach((s, i) => assert.ok(Math.abs(s.loss - losses[i]!) <= 1e-4 * Math.max(1, losses[i]!), `step ${i}: loss ${s.loss} vs ${losses[i]}`));
    assert.ok(run.history.every((s) => s.metrics?.acc !== undefined && s.metrics.acc >= 0 && s.metrics.acc <= 1));
  } finally {
    await c.close();
  }
});

test("ZeRO-3 loads in parts: each of 4 workers is sent the weights nothing trains (a frozen layer) and its own part of the rest, and holds far less than the whole model while loading; it trains to model.fit", async (t) => {
  // 118 MB of weights, 9.4 MB of them frozen: before loading in parts each worker held all of it, twice, as it loaded.
  const make = (): tf.LayersModel => {
    const init = (k: number): { kernelInitializer: ReturnType<typeof tf.initializers.glorotUniform> } => ({ kernelInitializer: tf.initializers.glorotUniform({ seed: 90 + k }) });
    return tf.sequential({
      layers: [
        tf.layers.dense({ inputShape: [784], units: 3000, activation: "relu", trainable: false, ...init(0) }),
        tf.layers.dense({ units: 3000, activation: "relu", ...init(1) }),
        tf.layers.dense({ units: 3000, activation: "relu", ...init(2) }),
        tf.layers.dense({ units: 3000, activation: "relu", ...init(3) }),
        tf.layers.dense({ units: 10, activation: "softmax", ...init(4) }),
      ],
    });
  };
  const data = datasets.synthetic({ inputShape: [784], classes: 10, size: 16, seed: 5 });
  const o = { epochs: 1, batchSize: 8, seed: 2, loss: "categoricalCrossentropy" as const, optimizer: { name: "adam" as const, learningRate: 0.001, beta1: 0.9, beta2: 0.999 } };
  // Building and sending 118 MB of weights holds the driver's thread for seconds at a time; on a
  // swamped machine past the default 10 s, and the workers took the driver for gone.
  const c = await cluster().workers(4).strategy("data", { shard: "parameters" }).heartbeat({ timeoutMs: 60_000 }).launch();
  // model.fit of 20M parameters on the stock cpu kernels takes many seconds; on the native ones, one.
  nativeAvailable();
  tf.setBackend("native");
  try {
    const model = make();
    const whole = model.countParams() * 4;
    const run = await c.fit(model, data, o);
    for (const m of run.memory) {
      const loading = m.loadPeakRssBytes - m.idleRssBytes;
      t.diagnostic(`rank ${m.rank}: loading took ${(loading / 2 ** 20).toFixed(1)} MiB above the process's own, the whole model is ${(whole / 2 ** 20).toFixed(1)} MiB`);
      assert.ok(loading < whole, `rank ${m.rank} held ${loading} bytes above its own while loading, the whole model's weights are ${whole}`);
    }
    const ref = make();
    await modelFitReference(ref, data, o);
    const diff = maxRelativeDifference(model, ref);
    t.diagnostic(`ZeRO-3 loaded in parts, Adam, 4 workers vs model.fit: ${diff.toExponential(2)}`);
    assert.ok(diff < 1e-4, `relative difference ${diff}`);
    assert.ok(maxRelativeDifference(model, make()) > 1e-6, "the trained layers moved");
  } finally {
    tf.setBackend("cpu");
    await c.close();
  }
});

test("under a memory cap that refuses ZeRO-1, ZeRO-3 on 4 workers trains a model whose whole replica needs 3x the cap", async () => {
  // 198,531 parameters with Adam: 16 bytes each whole (3.0 MiB), ZeRO-1 10 (1.9 MiB); ZeRO-3 4, plus a 64 KiB layer twice: under 1 MiB.
  // Each also counts the 2.4 MiB the runtime grows by in any fit: the cap is 1 MiB above that.
  const make = (): tf.LayersModel => deepClassifier(128, 3, { hidden: 12, width: 128, seed: 7 });
  const data = datasets.synthetic({ inputShape: [128], classes: 3, size: 16, seed: 63 });
  const o = { ...base, epochs: 1, batchSize: 4, optimizer: { name: "adam" as const, learningRate: 0.001, beta1: 0.9, beta2: 0.999 } };
  const capped = async (shard: "optimizer" | "parameters"): Promise<tf.LayersModel> => {
    const c = await cluster().workers(4).memory("3.4MiB").strategy("data", { shard }).launch();
    try {
      const model = make();
      await c.fit(model, data, o);
      return model;
    } finally {
      await c.close();
    }
  };
  await assert.rejects(capped("optimizer"), /above this worker's memory cap of 3\.4 MiB/);
  const three = await capped("parameters");
  const ref = make();
  await modelFitReference(ref, data, o);
  assert.ok(maxRelativeDifference(three, ref) < 1e-4);
});

test('strategy("auto") under a cap that no split into stages fits (three equal layers on 4 workers) chooses ZeRO-3, which trains to model.fit', async () => {
  // 197,376 parameters with Adam: 3.0 MiB whole, ZeRO-1 1.9 MiB, two stages hold two layers' (2.0 MiB), ZeRO-2 1.6 MiB, ZeRO-3 1.3 MiB,
  // each with the runtime's 2.4 MiB growth in a fit: a cap of 1.4 MiB above that.
  const make = (): tf.LayersModel =>
    tf.sequential({
      layers: [0, 1, 2].map((i) => tf.layers.dense({ ...(i === 0 ? { inputShape: [256] } : {}), units: 256, activation: i === 2 ? "softmax" : "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: 20 + i }) })),
    });
  const data = datasets.synthetic({ inputShape: [256], classes: 256, size: 16, seed: 64 });
  const o = { ...base, epochs: 1, batchSize: 8, optimizer: { name: "adam" as const, learningRate: 0.001, beta1: 0.9, beta2: 0.999 } };
  const c = await cluster().workers(4).memory("3.8MiB").strategy("auto").launch();
  const model = make();
  try {
    const run = await c.fit(model, data, o);
    assert.equal(run.plan.strategy === "data" ? run.plan.shard : run.plan.strategy, "parameters", "auto chose ZeRO-3");
    assert.match(run.plan.explain(), /2 stages: .*\n.*3 stages: skipped.*\n.*ZeRO-2 would need .*\n.*ZeRO-3 \(shard: "parameters"\) fits[: ].*\n.*no split into stages fits: auto chose ZeRO-3/);
  } finally {
    await c.close();
  }
  const ref = make();
  await modelFitReference(ref, data, o);
  assert.ok(maxRelativeDifference(model, ref) < 1e-4);
});

test("what ZeRO-1 cannot do yet is refused, saying why", async () => {
  const refused = (options: Parameters<ReturnType<typeof cluster>["strategy"]>[1], why: RegExp) =>
    assert.throws(() => cluster().workers(2).strategy("data", options as never).spec(), (e: unknown) => e instanceof ConfigError && why.test(e.message));
  refused({ shard: "optimizer", sync: { every: 2 } }, /inner optimizer state for the whole model/);
  refused({ shard: "optimizer", compression: { name: "powersgd", rank: 2 } }, /low-rank factors/);
});

test("sharded checkpoints: ZeRO-1 on 3 workers writes a part per replica; resumed on 2 under ZeRO-3, whose checkpoint resumes under plain data parallelism and that one's under ZeRO-2, ends as model.fit", async (t) => {
  // 15 steps; each fit but the last is stopped (the steps in flight finish and are checkpointed), the next resumes from its latest.
  const adam = { ...base, epochs: 3, optimizer: { name: "adam" as const, learningRate: 0.01, beta1: 0.9, beta2: 0.999 } };
  const dirs = [0, 1, 2].map(() => fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-zero-ckpt-")));
  const at = (d: string, step: number): string => path.join(d, `step-${String(step).padStart(6, "0")}`);
  const fitOn = async (workers: number, shard: "optimizer" | "gradients" | "parameters" | undefined, o: FitOptions, stopAt?: number): Promise<tf.LayersModel> => {
    const c = await cluster().workers(workers).strategy("data", shard ? { shard } : {}).launch();
    try {
      const model = smallClassifier(6, 3, { seed: 40 });
      const stop = new AbortController();
      const run = c.fit(model, ds, { ...o, signal: stop.signal, onStep: (s) => void (s.step === stopAt && stop.abort()) });
      if (stopAt === undefined) await run;
      else await assert.rejects(run);
      return model;
    } finally {
      await c.close();
    }
  };
  try {
    await fitOn(3, "optimizer", { ...adam, checkpoint: { dir: dirs[0]!, every: 3 } }, 4);
    const meta = JSON.parse(fs.readFileSync(path.join(at(dirs[0]!, 3), "meta.json"), "utf8")).body;
    assert.deepEqual(meta.optimizerStates, []);
    assert.deepEqual(meta.shards.parts.map((p: { file: string }) => p.file), ["optimizer-0.bin", "optimizer-1.bin", "optimizer-2.bin"]);
    // 83 parameters, Adam's two slots: each replica's part holds both over its third of them.
    const sizes = meta.shards.parts.map((p: { file: string }) => fs.statSync(path.join(at(dirs[0]!, 3), p.file)).size);
    assert.deepEqual(sizes, meta.shards.parts.map((p: { ranges: number[][] }) => 2 * 4 * (p.ranges[0]![1]! - p.ranges[0]![0]!)));
    assert.equal(sizes.reduce((a: number, b: number) => a + b, 0), 2 * 4 * 83);
    await fitOn(2, "parameters", { ...adam, resumeFrom: dirs[0]!, checkpoint: { dir: dirs[1]!, every: 3 } }, 7);
    await fitOn(2, undefined, { ...adam, resumeFrom: dirs[1]!, checkpoint: { dir: dirs[2]!, every: 3 } }, 10);
    const resumed = await fitOn(2, "gradients", { ...adam, resumeFrom: dirs[2]! });
    const reference = smallClassifier(6, 3, { seed: 40 });
    await modelFitReference(reference, ds, adam);
    const diff = maxRelativeDifference(resumed, reference);
    t.diagnostic(`ZeRO-1 x 3 -> ZeRO-3 x 2 -> data x 2 -> ZeRO-2 x 2: ${diff.toExponential(2)} from model.fit`);
    assert.ok(diff < 1e-5, `relative difference ${diff}`);
  } finally {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  }
});

for (const [name, shard] of [["ZeRO-3", "parameters"], ["ZeRO-1", "optimizer"]] as const) {
  test(`elastic ${name}: a worker killed mid-fit sends the others back to the last checkpoint, re-sharded over them; a worker added re-shards all; the fit equals model.fit`, async (t) => {
    const data = datasets.synthetic({ inputShape: [6], classes: 3, size: 240, seed: 4 });
    // 30 steps: the loss at step 6, a worker added at step 8.
    const o = { epochs: 3, batchSize: 24, seed: 5, loss: "categoricalCrossentropy" as const, optimizer: { name: "adam" as const, learningRate: 0.01, beta1: 0.9, beta2: 0.999 } };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-zero-elastic-"));
    const c = await cluster().workers(3).strategy("data", { shard, elastic: { minWorkers: 2 } }).timeouts({ stepMs: 30_000 }).heartbeat(TEST_HEARTBEAT).launch();
    try {
      await assert.rejects(c.fit(smallClassifier(6, 3), data, o), /needs checkpoints: a lost worker takes its part of the optimizer state with it/);
      assert.match(c.plan(smallClassifier(6, 3), { batchSize: 24, optimizer: o.optimizer }).toString(), /elastic, sharded: .* go back to the fit's last checkpoint, re-sharded over them/);
      const model = smallClassifier(6, 3);
      let joined: Promise<number> | undefined;
      // The batch after the add waits for the new worker to have joined the cluster: it is admitted at the next step boundary.
      const callbacks = { onBatchEnd: async () => void (await joined) };
      const run = await c.fit(model, data, { ...o, callbacks, checkpoint: { dir, every: 4 }, onStep: (s) => void (s.step === 6 && c.kill(1), s.step === 8 && !joined && (joined = c.add())) });
      await joined;
      const m = run.membership.map((x) => [x.change, x.rank, x.step, x.workers]);
      t.diagnostic(`membership: ${JSON.stringify(m)}`);
      assert.deepEqual(m.map(([change, , , workers]) => [change, workers]), [["left", 2], ["joined", 3]]);
      assert.equal(run.membership[0]!.step! % 4, 0, "the loss went back to a checkpoint");
      assert.deepEqual(run.history.map((s) => s.step), Array.from({ length: 30 }, (_, i) => i), "every step once, in order");
      assert.equal(run.history[29]!.workers.length, 3);
      const ref = smallClassifier(6, 3);
      await modelFitReference(ref, data, o);
      const diff = maxRelativeDifference(model, ref);
      t.diagnostic(`elastic ${name} vs model.fit: ${diff.toExponential(2)}`);
      assert.ok(diff < 1e-4, `relative difference ${diff}`);
      // The last checkpoint holds a part for each of the three members then.
      const last = JSON.parse(fs.readFileSync(path.join(dir, "step-000030", "meta.json"), "utf8")).body;
      assert.equal(last.shards.parts.length, 3);
    } finally {
      await c.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

test("under a memory cap, a replica's check at load counts its share of the optimizer's state: ZeRO-1 loads a model plain data parallelism cannot, and strategy(\"auto\") chooses it", async () => {
  // 70,003 parameters with Adam: 16 bytes each whole (1.07 MiB) is above a 1 MiB cap (3.4 with the runtime's 2.4 MiB growth in a fit), 12 (4 + 4 + 8 / 2) fits.
  const wide = (): tf.LayersModel => tf.sequential({ layers: [tf.layers.dense({ inputShape: [6], units: 7000, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: 5 }) }), tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 6 }) })] });
  const o = { ...base, epochs: 1, batchSize: 2, optimizer: { name: "adam" as const, learningRate: 0.01, beta1: 0.9, beta2: 0.999 } };
  // Plain data parallelism would need 16 bytes a parameter, above the cap (its refusal at load is tested in pipeline-equivalence).
  assert.ok(wide().countParams() * 16 > 2 ** 20);
  const c = await cluster().workers(2).memory("3.4MiB").strategy("auto").launch();
  const sharded = wide();
  try {
    const run = await c.fit(sharded, datasets.synthetic({ inputShape: [6], classes: 3, size: 8, seed: 61 }), o);
    assert.equal(run.plan.strategy, "data");
    assert.equal(run.plan.strategy === "data" ? run.plan.shard : null, "optimizer", "auto chose ZeRO-1");
  } finally {
    await c.close();
  }
  const ref = wide();
  await modelFitReference(ref, datasets.synthetic({ inputShape: [6], classes: 3, size: 8, seed: 61 }), o);
  assert.ok(maxRelativeDifference(sharded, ref) < 1e-4);
});
