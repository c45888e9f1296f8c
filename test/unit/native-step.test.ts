import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import fc from "fast-check";
import { NATIVE_BACKEND } from "../../sdk/backends/native/backend";
import type { LossName } from "../../sdk/protocol/loss-names";
import { DataError } from "../../sdk/errors/errors";
import type { Tensorlike } from "../../sdk/protocol/tensor";
import { sliceGradient } from "../../sdk/compute/slice-gradient";
import { loadReplica, type LoadedReplica } from "../../sdk/compute/loaded-replica";
import { nativeAvailable, randomArray } from "../helpers/backends";

/**
 * The native replica step (sdk/backends/native/step) against TF.js's autodiff on the stock cpu
 * kernels: the same model, weights and slice give the same loss and the same gradient, for
 * random chains of the layers it compiles, every loss it computes, and slice weights.
 */

tf.enableProdMode();
nativeAvailable();

type Act = "linear" | "relu" | "sigmoid" | "tanh" | "softmax";

interface Spec {
  input: number[];
  convs: Array<{ filters: number; kernel: number; stride: number; same: boolean; act: Act; pool: "max" | "avg" | null; poolSame: boolean; bias: boolean }>;
  /** separate: the activation as an Activation layer after a linear Dense. */
  dense: Array<{ units: number; act: Act; bias: boolean; separate: boolean }>;
  loss: "categoricalCrossentropy" | "sparseCategoricalCrossentropy" | "meanSquaredError";
  classes: number;
  batch: number;
  weight: number;
  seed: number;
}

/** Seeded initializers, so a failure replays exactly from fast-check's seed and path. */
function build(s: Spec): tf.LayersModel {
  let k = 0;
  const init = (): { kernelInitializer: ReturnType<typeof tf.initializers.glorotUniform>; biasInitializer: ReturnType<typeof tf.initializers.randomNormal> } => ({
    kernelInitializer: tf.initializers.glorotUniform({ seed: s.seed + k++ }),
    biasInitializer: tf.initializers.randomNormal({ seed: s.seed + k++ }),
  });
  const layers: tf.layers.Layer[] = [tf.layers.inputLayer({ inputShape: s.input })];
  for (const c of s.convs) {
    layers.push(tf.layers.conv2d({ filters: c.filters, kernelSize: c.kernel, strides: c.stride, padding: c.same ? "same" : "valid", activation: c.act, useBias: c.bias, ...init() }));
    if (c.pool === "max") layers.push(tf.layers.maxPooling2d({ poolSize: 2, padding: c.poolSame ? "same" : "valid" }));
    if (c.pool === "avg") layers.push(tf.layers.averagePooling2d({ poolSize: 2, padding: c.poolSame ? "same" : "valid" }));
  }
  if (s.input.length > 1) layers.push(tf.layers.flatten());
  for (const d of s.dense) {
    layers.push(tf.layers.dense({ units: d.units, activation: d.separate ? "linear" : d.act, useBias: d.bias, ...init() }));
    if (d.separate) layers.push(tf.layers.activation({ activation: d.act }));
  }
  layers.push(tf.layers.dense({ units: s.classes, activation: s.loss === "meanSquaredError" ? "linear" : "softmax", ...init() }));
  return tf.sequential({ layers });
}

function slice(s: Spec): { x: Tensorlike; y: Tensorlike } {
  const n = s.batch * s.input.reduce((a, b) => a * b, 1);
  const x = { data: randomArray(n, s.seed, -1, 1), shape: [s.batch, ...s.input] };
  const labels = Float32Array.from(randomArray(s.batch, s.seed + 1, 0, s.classes), Math.floor);
  if (s.loss === "sparseCategoricalCrossentropy") return { x, y: { data: labels, shape: [s.batch, 1] } };
  if (s.loss === "meanSquaredError") return { x, y: { data: randomArray(s.batch * s.classes, s.seed + 2), shape: [s.batch, s.classes] } };
  const y = new Float32Array(s.batch * s.classes);
  labels.forEach((c, i) => (y[i * s.classes + c] = 1));
  return { x, y: { data: y, shape: [s.batch, s.classes] } };
}

async function replicaOn(backend: string, model: tf.LayersModel, loss: LossName): Promise<LoadedReplica> {
  tf.setBackend(backend);
  const topology = model.toJSON(null, false) as unknown as Record<string, unknown>;
  const weights = model.getWeights().map((w) => ({ data: Float32Array.from(w.dataSync()), shape: [...w.shape] }));
  return loadReplica({ type: "load", v: PROTOCOL_VERSION, id: 1, role: "replica", topology, optimizer: { name: "sgd", learningRate: 0.1 }, loss, replicaBatch: 64, stepTimeoutMs: 60_000, attachments: [] }, weights, null);
}

/** Every gradient value within 2e-4 of the reference's largest, and the loss within 1e-5 relative. */
function assertSameGradient(native: { loss: number; g: Float32Array }, ref: { loss: number; g: Float32Array }, what: string): void {
  let scale = 0;
  for (const v of ref.g) scale = Math.max(scale, Math.abs(v));
  assert.ok(Math.abs(native.loss - ref.loss) <= 1e-5 * Math.max(1, Math.abs(ref.loss)), `${what}: loss ${native.loss}, autodiff ${ref.loss}`);
  for (let i = 0; i < ref.g.length; i++) {
    if (!(Math.abs(native.g[i]! - ref.g[i]!) <= 2e-4 * scale + 1e-7)) assert.fail(`${what}: gradient[${i}] is ${native.g[i]}, autodiff ${ref.g[i]} (largest ${scale})`);
  }
}

async function compare(s: Spec): Promise<void> {
  tf.setBackend("cpu");
  const model = build(s);
  // Strides and pools can shrink a small image to nothing; such a model is not worth comparing.
  const empty = model.layers.some((l) => (l.outputShape as number[]).includes(0));
  if (empty) model.dispose();
  fc.pre(!empty);
  const { x, y } = slice(s);
  const run = async (backend: string): Promise<{ loss: number; g: Float32Array; r: LoadedReplica }> => {
    const r = await replicaOn(backend, model, s.loss);
    const g = new Float32Array(r.gradientLength);
    const { loss } = await sliceGradient(r, x, y, s.weight, g);
    return { loss, g, r };
  };
  const ref = await run("cpu");
  const native = await run(NATIVE_BACKEND);
  try {
    assert.equal(ref.r.step.native, null);
    assert.ok(native.r.step.native, `the model compiled: ${native.r.step.why ?? ""}`);
    assertSameGradient(native, ref, JSON.stringify(s));
  } finally {
    tf.setBackend("cpu");
    [model, ref.r.model, native.r.model].forEach((m) => m.dispose());
  }
  // A slice can have no gradient at all (dead relus, and a batch holding each class once): it
  // proves nothing, so it does not count as one of the runs.
  fc.pre(ref.g.some((v) => v !== 0));
}

const act = fc.constantFrom<Act>("linear", "relu", "sigmoid", "tanh");

const specs = fc.record({
  image: fc.boolean(),
  convs: fc.array(fc.record({ filters: fc.integer({ min: 1, max: 5 }), kernel: fc.integer({ min: 1, max: 3 }), stride: fc.integer({ min: 1, max: 2 }), same: fc.boolean(), act, pool: fc.constantFrom<"max" | "avg" | null>("max", "avg", null), poolSame: fc.boolean(), bias: fc.boolean() }), { maxLength: 2 }),
  dense: fc.array(fc.record({ units: fc.integer({ min: 1, max: 9 }), act, bias: fc.boolean(), separate: fc.boolean() }), { maxLength: 3 }),
  loss: fc.constantFrom<Spec["loss"]>("categoricalCrossentropy", "sparseCategoricalCrossentropy", "meanSquaredError"),
  classes: fc.integer({ min: 2, max: 6 }),
  batch: fc.integer({ min: 1, max: 7 }),
  weight: fc.constantFrom(1, 0.25, 0.6),
  seed: fc.integer({ min: 1, max: 1e6 }),
}).map(({ image, convs, ...rest }): Spec => ({ ...rest, input: image ? [9, 8, 2] : [11], convs: image ? convs : [] }));

describe("native replica step against TF.js autodiff", () => {
  test("random chains of Conv2D, pooling, Flatten, Dense and Activation, every loss: same loss and gradient", async () => {
    await fc.assert(fc.asyncProperty(specs, compare), { numRuns: 200, seed: 7 });
  });

  test("the demo MLP and CNN of the benchmarks (the stock cpu convolution is slow: the CNN on 8 samples)", async () => {
    const { buildDemoModel } = await import("../../sdk/cli/models");
    for (const [name, batch] of [["mlp", 64], ["cnn", 8]] as const) {
      tf.setBackend("cpu");
      const model = buildDemoModel(name);
      const x = { data: randomArray(batch * 784, 3, 0, 1), shape: [batch, 28, 28, 1] };
      const y = { data: new Float32Array(batch * 10).map((_, i) => (i % 10 === Math.floor(i / 10) % 10 ? 1 : 0)), shape: [batch, 10] };
      const grads: Array<{ loss: number; g: Float32Array }> = [];
      for (const backend of ["cpu", NATIVE_BACKEND]) {
        const r = await replicaOn(backend, model, "categoricalCrossentropy");
        const g = new Float32Array(r.gradientLength);
        grads.push({ loss: (await sliceGradient(r, x, y, 1, g)).loss, g });
        r.model.dispose();
      }
      tf.setBackend("cpu");
      model.dispose();
      assertSameGradient(grads[1]!, grads[0]!, name);
    }
  });
});

describe("the native step's arrays across batch sizes", () => {
  test("one replica computes batches of 5, 3, 5, 7 and 2 samples in turn (a smaller batch in views of the largest's arrays): each gradient equals a fresh replica's to the bit", async () => {
    const spec = (batch: number, seed: number): Spec => ({ input: [9, 8, 2], convs: [{ filters: 3, kernel: 3, stride: 1, same: false, act: "relu", pool: "max", poolSame: false, bias: true }], dense: [{ units: 6, act: "tanh", bias: true, separate: false }], loss: "categoricalCrossentropy", classes: 4, batch, weight: 1, seed });
    tf.setBackend("cpu");
    const model = build(spec(1, 11));
    const shared = await replicaOn(NATIVE_BACKEND, model, "categoricalCrossentropy");
    try {
      for (const [k, batch] of [5, 3, 5, 7, 2].entries()) {
        const { x, y } = slice(spec(batch, 100 + k));
        const fresh = await replicaOn(NATIVE_BACKEND, model, "categoricalCrossentropy");
        const a = new Float32Array(shared.gradientLength);
        const b = new Float32Array(fresh.gradientLength);
        const la = (await sliceGradient(shared, x, y, 1, a)).loss;
        const lb = (await sliceGradient(fresh, x, y, 1, b)).loss;
        fresh.model.dispose();
        assert.ok(b.some((v) => v !== 0), `batch ${batch}: a gradient to compare`);
        assert.equal(la, lb, `batch ${batch}: loss`);
        assert.deepEqual(a, b, `batch ${batch}: gradient`);
      }
    } finally {
      shared.model.dispose();
      model.dispose();
      tf.setBackend("cpu");
    }
  });
});

describe("what the native step leaves to autodiff, and says why", () => {
  const masked = (): tf.LayersModel => {
    const ids = tf.input({ shape: [5] });
    const e = tf.layers.embedding({ inputDim: 9, outputDim: 3, maskZero: true }).apply(ids) as tf.SymbolicTensor;
    const sum = tf.layers.add().apply([e, e]) as tf.SymbolicTensor;
    return tf.model({ inputs: ids, outputs: tf.layers.lstm({ units: 2 }).apply(sum) as tf.SymbolicTensor });
  };
  const cases: Array<[string, () => tf.LayersModel, LossName, RegExp]> = [
    ["a layer it does not compute", () => tf.sequential({ layers: [tf.layers.dense({ inputShape: [4], units: 3 }), tf.layers.gaussianNoise({ stddev: 0.1 }), tf.layers.dense({ units: 2, activation: "softmax" })] }), "categoricalCrossentropy", /GaussianNoise.*not one of the layers/i],
    ["a wrapper it does not compute", () => tf.sequential({ layers: [tf.layers.bidirectional({ layer: tf.layers.lstm({ units: 2 }) as tf.RNN, inputShape: [3, 4] })] }), "meanSquaredError", /Bidirectional/],
    ["an activation it does not compute", () => tf.sequential({ layers: [tf.layers.dense({ inputShape: [4], units: 2, activation: "logSoftmax" as "softmax" })] }), "meanSquaredError", /logSoftmax activation/],
    ["a mask that reaches a merge", masked, "meanSquaredError", /mask reaches .*Add/],
    ["a stateful recurrent layer", () => tf.sequential({ layers: [tf.layers.simpleRNN({ units: 2, stateful: true, batchInputShape: [2, 3, 4] })] }), "meanSquaredError", /stateful/],
  ];
  for (const [what, make, loss, why] of cases) {
    test(what, async () => {
      tf.setBackend("cpu");
      const model = make();
      const r = await replicaOn(NATIVE_BACKEND, model, loss);
      tf.setBackend("cpu");
      assert.equal(r.step.native, null);
      assert.match(r.step.why ?? "", why);
      model.dispose();
      r.model.dispose();
    });
  }
});

describe("a slice that does not fit the model", () => {
  test("wrong sample shape or wrong targets: a DataError naming both shapes, nothing written", async () => {
    tf.setBackend("cpu");
    const model = tf.sequential({ layers: [tf.layers.dense({ inputShape: [4], units: 3, activation: "softmax" })] });
    const r = await replicaOn(NATIVE_BACKEND, model, "categoricalCrossentropy");
    assert.ok(r.step.native);
    const g = new Float32Array(r.gradientLength);
    const y = { data: new Float32Array(6), shape: [2, 3] };
    await assert.rejects(sliceGradient(r, { data: new Float32Array(10), shape: [2, 5] }, y, 1, g), (e: unknown) => e instanceof DataError && /x \[2, 5\].*samples of shape \[4\]/.test(e.message));
    await assert.rejects(sliceGradient(r, { data: new Float32Array(8), shape: [2, 4] }, { data: new Float32Array(4), shape: [2, 2] }, 1, g), (e: unknown) => e instanceof DataError && /targets of shape \[2, 3\]/.test(e.message));
    assert.ok(g.every((v) => v === 0));
    tf.setBackend("cpu");
    model.dispose();
    r.model.dispose();
  });
});
