import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND, type NativeBackend } from "../../sdk/backends/native/backend";
import { buildDemoModel } from "../../sdk/cli/models";
import { convColumnsBytes } from "../../sdk/plan/memory";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { sliceGradient } from "../../sdk/compute/slice-gradient";
import { loadReplica } from "../../sdk/compute/loaded-replica";
import { nativeAvailable, randomArray } from "../helpers/backends";

/**
 * The memory estimate's convolution column buffer against the one the native kernels make:
 * in a fresh process (node runs each test file in its own), the backend's buffer after a step
 * is the largest any of the model's convolutions asked for.
 */

tf.enableProdMode();
nativeAvailable();

test("the estimate's column buffer is the one the native step's convolutions make: the demo CNN at 32 samples, below the 16 MiB cap", async () => {
  tf.setBackend("cpu");
  const model = buildDemoModel("cnn");
  const batch = 32;
  tf.setBackend(NATIVE_BACKEND);
  const topology = model.toJSON(null, false) as unknown as Record<string, unknown>;
  const weights = model.getWeights().map((w) => ({ data: Float32Array.from(w.dataSync()), shape: [...w.shape] }));
  const r = await loadReplica({ type: "load", v: PROTOCOL_VERSION, id: 1, role: "replica", topology, optimizer: { name: "sgd", learningRate: 0.1 }, loss: "categoricalCrossentropy", replicaBatch: batch, stepTimeoutMs: 60_000, attachments: [] }, weights, null);
  try {
    assert.ok(r.step.native, "the demo CNN compiles to the native step");
    const x = { data: randomArray(batch * 784, 3, 0, 1), shape: [batch, 28, 28, 1] };
    const y = { data: new Float32Array(batch * 10).map((_, i) => (i % 10 === 0 ? 1 : 0)), shape: [batch, 10] };
    await sliceGradient(r, x, y, 1, new Float32Array(r.gradientLength));
    const made = (tf.backend() as NativeBackend).scratch(0).length * 4;
    // Its second convolution: 11 x 11 positions of 3 x 3 x 32 columns an image.
    assert.equal(made, 11 * 11 * 3 * 3 * 32 * batch * 4);
    assert.equal(convColumnsBytes(summarizeModel(model), batch), made);
    assert.equal(convColumnsBytes(summarizeModel(model), 4096), 16 * 2 ** 20, "capped at 16 MiB");
  } finally {
    r.model.dispose();
    tf.setBackend("cpu");
    model.dispose();
  }
});
