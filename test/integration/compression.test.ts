import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type Cluster, type TrainingRun } from "../../sdk/index";
import type { Compression } from "../../sdk/protocol/wire-formats";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import { NonFiniteError } from "../../sdk/errors/errors";
import { maxRelativeDifference } from "../helpers/models";
import { modelFitReference } from "../helpers/reference";

/**
 * Gradient compression over real worker processes: a compressed fit stays near single-process
 * model.fit (as near as 16-bit gradients allow, which the float32 path beats by orders of
 * magnitude), both data planes reach the same bits (the same roundings in the same order),
 * each worker sends half the bytes, and a sum fp16 cannot hold is a typed error that names
 * bf16, never NaN weights.
 */

tf.enableProdMode();
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 48, seed: 3 });
const o = { epochs: 3, batchSize: 8, optimizer: { name: "adam", learningRate: 0.02, beta1: 0.9, beta2: 0.999 } as OptimizerSpec, shuffle: true, seed: 5 };
// How far from model.fit a fit may end: float32 as the equivalence tests; 16-bit by the format's precision.
const TOLERANCE: Record<Compression | "float32", number> = { float32: 1e-4, fp16: 2e-3, bf16: 5e-2 };

function wide(): tf.LayersModel {
  // 6 -> 64 -> 3: enough values (643) that the frames' headers do not hide the halving.
  return tf.sequential({
    layers: [
      tf.layers.dense({ units: 64, inputShape: [6], activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: 7 }) }),
      tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 8 }) }),
    ],
  });
}

async function trained(c: Cluster, make: () => tf.LayersModel): Promise<{ model: tf.LayersModel; run: TrainingRun }> {
  const model = make();
  const run = await c.fit(model, ds, { ...o, loss: "categoricalCrossentropy" });
  return { model, run };
}

function sentPerStep(run: TrainingRun): number {
  const bytes = run.history.flatMap((s) => s.workers.map((w) => w.sentBytes ?? NaN));
  assert.ok(bytes.every((b) => b > 0), `every worker reports the bytes it sent: ${bytes.join(", ")}`);
  return bytes.reduce((a, b) => a + b, 0) / bytes.length;
}

const reference = wide();
let fitLosses: number[];
before(async () => {
  fitLosses = await modelFitReference(reference, ds, o);
});

for (const compression of ["float32", "fp16", "bf16"] as const) {
  describe(`data, 2 workers, gradients as ${compression}`, () => {
    const runs: Partial<Record<"native" | "websocket", { model: tf.LayersModel; run: TrainingRun }>> = {};
    const clusters: Cluster[] = [];
    before(async () => {
      for (const plane of ["native", "websocket"] as const) {
        const c = await cluster().workers(2).strategy("data", compression === "float32" ? {} : { compression }).dataPlane(plane).launch();
        clusters.push(c);
        runs[plane] = await trained(c, wide);
      }
    });
    after(async () => {
      for (const c of clusters) await c.close();
    });

    test(`ends within ${TOLERANCE[compression]} of model.fit, on both data planes, with the same bits on both`, () => {
      for (const plane of ["native", "websocket"] as const) {
        const { model, run } = runs[plane]!;
        assert.equal(run.dataPlane?.path, plane);
        const diff = maxRelativeDifference(model, reference);
        console.log(`${compression} over ${plane}: relative difference from model.fit ${diff.toExponential(2)}, last loss ${run.history.at(-1)!.loss.toFixed(5)} vs ${fitLosses.at(-1)!.toFixed(5)}`);
        assert.ok(diff < TOLERANCE[compression], `relative difference ${diff} >= ${TOLERANCE[compression]}`);
        // Compression really ran: 16-bit gradients leave more than float32's rounding behind.
        if (compression !== "float32") assert.ok(diff > TOLERANCE.float32 / 100, `relative difference ${diff}: as close as float32 gets`);
      }
      assert.equal(maxRelativeDifference(runs.native!.model, runs.websocket!.model), 0, "both data planes end with the same weights");
    });

    test("each worker sends half the bytes of float32", () => {
      const values = wide().countParams();
      const floatBytes = values * 4; // 2(N-1)/N = 1 for N = 2
      for (const plane of ["native", "websocket"] as const) {
        const sent = sentPerStep(runs[plane]!.run);
        const want = compression === "float32" ? floatBytes : floatBytes / 2;
        console.log(`${compression} over ${plane}: ${sent} bytes sent per worker and step for ${values} gradient values`);
        // Headers and the float32 state and flag come on top: 32 bytes a frame or an operation.
        assert.ok(sent >= want && sent < want + 256, `${sent} bytes, expected ${want} and headers`);
      }
    });
  });
}

test("parameter servers: compressed pushes train near model.fit, with half the bytes pushed", async () => {
  const c = await cluster().workers(2).ps(1).strategy("ps", { mode: "sync", compression: "fp16" }).launch();
  try {
    const { model, run } = await trained(c, wide);
    const diff = maxRelativeDifference(model, reference);
    const sent = sentPerStep(run);
    console.log(`ps sync fp16: relative difference from model.fit ${diff.toExponential(2)}; ${sent} bytes pushed per worker and step`);
    assert.ok(diff < TOLERANCE.fp16 && diff > TOLERANCE.float32 / 100, `relative difference ${diff}`);
    // [gradient in 16 bits | flag in 32]: the values two to a word, then one float.
    assert.equal(sent, 4 * Math.ceil(wide().countParams() / 2) + 4);
    assert.match(run.plan.toString(), /pushed per worker step/);
  } finally {
    await c.close();
  }
});

test("a sum fp16 cannot hold stops the fit with a typed error naming bf16; bf16 trains on", async () => {
  // A linear fit to inputs of up to 1e3: squared-error gradients near 1e6, beyond fp16's 65504,
  // while every float32 value stays finite.
  const x = tf.mul(tf.randomUniform([16, 6], 0, 1, "float32", 4), 1e3);
  const y = tf.oneHot(tf.tensor1d([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0], "int32"), 3).toFloat();
  const huge = datasets.fromTensors(x, y);
  const linear = (): tf.LayersModel => tf.sequential({ layers: [tf.layers.dense({ units: 3, inputShape: [6], kernelInitializer: tf.initializers.glorotUniform({ seed: 9 }) })] });
  const fit = { epochs: 1, batchSize: 8, optimizer: { name: "sgd", learningRate: 1e-9 } as OptimizerSpec, shuffle: false, loss: "meanSquaredError" as const };
  const fp16 = await cluster().workers(2).strategy("data", { compression: "fp16" }).launch();
  try {
    const model = linear();
    const start = model.getWeights().map((w) => w.dataSync().slice());
    await assert.rejects(fp16.fit(model, huge, fit), (err) => {
      assert.ok(err instanceof NonFiniteError, String(err));
      assert.match(err.message, /all-reduced gradient of .* compressed to 16 bits, held NaN or Infinity/);
      assert.match(err.hint ?? "", /use compression "bf16"/);
      return true;
    });
    // No worker applied the step: the weights are where they started, and finite.
    model.getWeights().forEach((w, i) => assert.deepEqual(w.dataSync(), start[i]));
    assert.equal(fp16.state, "ready");
  } finally {
    await fp16.close();
  }
  const bf16 = await cluster().workers(2).strategy("data", { compression: "bf16" }).launch();
  try {
    const model = linear();
    const run = await bf16.fit(model, huge, fit);
    assert.ok(run.history.every((s) => !s.skipped && Number.isFinite(s.loss)));
    assert.ok(model.getWeights().every((w) => w.dataSync().every(Number.isFinite)));
  } finally {
    await bf16.close();
    tf.dispose([x, y]);
  }
});
