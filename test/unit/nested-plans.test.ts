import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { PlanError } from "../../sdk/errors/errors";
import { maskedOutputs } from "../../sdk/model/masks";
import { outputShapeIn } from "../../sdk/model/layer-nodes";
import { topologyOf } from "../../sdk/model/topology";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { keptElementsPerSample } from "../../sdk/plan/memory";
import { gpipe } from "../../sdk/plan/schedules";
import { simulateShared } from "../../sdk/plan/shared-simulation";
import { frozenNested, maskedLstm, nestedOnSequences } from "../helpers/nested-models";

test("a nested model frozen as a whole is rebuilt frozen from its topology, with the driver's weights in the driver's order", async () => {
  const model = frozenNested();
  assert.equal(model.trainableWeights.length, 2);
  // TF.js alone brings it back training: what workers built before.
  const plain = await tf.models.modelFromJSON(model.toJSON(null, false) as unknown as tf.io.ModelJSON["modelTopology"] as never);
  assert.equal(plain.trainableWeights.length, 6);
  const rebuilt = await tf.models.modelFromJSON(topologyOf(model) as never);
  assert.equal(rebuilt.trainableWeights.length, 2);
  assert.deepEqual(rebuilt.weights.map((w) => w.shape), model.weights.map((w) => w.shape));
  // Left trainable, nothing is marked.
  const open = frozenNested(false);
  assert.deepEqual(topologyOf(open), open.toJSON(null, false) as never);
});

test("a layer called on other shapes than it was built for is read at its call in this model", () => {
  const model = nestedOnSequences();
  const seq = model.layers.find((l) => l.getClassName() === "Sequential")!;
  assert.throws(() => seq.outputShape, /multiple inbound nodes/);
  assert.deepEqual(outputShapeIn(model, seq), [null, 7, 2]);
  const summary = summarizeModel(model);
  const nested = summary.layers.find((l) => l.className === "Sequential")!;
  // Its own layers' FLOPs (4 -> 5 -> 2) at each of the 7 positions.
  assert.equal(nested.flopsPerSample, 7 * (2 * 4 * 5 + 5 + 2 * 5 * 2 + 2));
  assert.deepEqual(nested.inputShape, [null, 7, 4]);
  // What autograd keeps: the inner layers' outputs (5 after relu: 3 copies; 2 linear: 1) at each position.
  assert.equal(keptElementsPerSample([nested]), 7 * (3 * 5 + 1 * 2));
});

test("an Embedding's mask marks its output, and what carries it on, until a layer consumes it", () => {
  const masked = maskedOutputs(maskedLstm());
  assert.equal(masked.size, 1, "the Embedding's output only: the LSTM (returnSequences false) consumes the mask");
  const [[output, maker]] = [...masked.entries()];
  assert.match(output!, /embedding/);
  assert.equal(maker, output);
  const cuts = summarizeModel(maskedLstm()).cuts;
  assert.deepEqual(cuts.map((c) => c.ok), [true, false, true, true]);
  assert.equal(maskedOutputs(frozenNested()).size, 0);
});

test("a schedule costed with NaN or Infinity is refused as a PlanError naming the stage, never simulated forever", () => {
  for (const bad of [NaN, Infinity, -1]) {
    assert.throws(
      () => simulateShared(gpipe(2, 2), (s) => ({ computeMs: s === 1 ? bad : 1, sendMs: 0.1 }), () => 1),
      (e: unknown) => e instanceof PlanError && e.details.stage === 1 && new RegExp(`costs ${bad} ms`).test(e.message),
    );
  }
  assert.equal(simulateShared(gpipe(2, 2), () => ({ computeMs: 1, sendMs: 0.1 }), () => 1).length, 2);
});
