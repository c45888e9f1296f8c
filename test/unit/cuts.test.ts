import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster } from "../../sdk/cluster/builder";
import { ConfigError, ModelError } from "../../sdk/errors/errors";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { buildModel } from "../../sdk/model/model-io";
import { hostCopies } from "../../sdk/driver/model-transfer";
import { stageTopology, stageWeightOrder } from "../../sdk/roles/pipeline/stage-model";
import { stageVariables, modelOrder } from "../../sdk/strategies/pipeline/stage-weights";
import { residualCnn, transformerStack } from "../helpers/residual-models";
import { batchNormClassifier, residualClassifier } from "../helpers/stateful-models";
import type { PipelinePlan } from "../../sdk/plan/plans";

tf.enableProdMode();
const okPoints = (m: tf.LayersModel) => summarizeModel(m).cuts.flatMap((c, j) => (c.ok ? [j] : []));

test("a model's cut points are where exactly one activation crosses: between residual blocks, never inside one; model inputs do not cross", () => {
  assert.deepEqual(okPoints(batchNormClassifier()), [0, 1, 2, 3, 4, 5, 6, 7], "a Sequential model is a chain: every point");
  assert.deepEqual(okPoints(residualCnn()), [0, 1, 2, 3, 9, 10, 16, 17, 24, 25, 26, 27]);
  // The first block's skip is the model input itself, which the driver hands to every stage reading it.
  assert.deepEqual(okPoints(transformerStack()), [0, 1, 2, 3, 7, 10, 14, 15, 16]);
  const cnn = summarizeModel(residualCnn());
  const inside = cnn.cuts[21]!;
  assert.ok(!inside.ok);
  // The strided block: from its first conv to the add that merges the projection shortcut.
  assert.equal(inside.block.first, cnn.layers[17]!.name);
  assert.equal(inside.block.last, cnn.layers[23]!.name);
  assert.equal(inside.crossing.length, 2);
  const at = cnn.cuts[24]!;
  assert.ok(at.ok);
  assert.deepEqual(at.shape, [null, 4, 4, 8]);
  assert.equal(cnn.layers[8]!.inputShape.length, 4, "a merge's input shape is read from the graph");
});

test("a plan splits a residual net only at its cut points; a hand placement through a block is refused naming it", () => {
  const model = residualCnn();
  const plan = cluster().workers(3).strategy("pipeline", { microBatches: 2 }).plan(model, { batchSize: 8 });
  if (plan.strategy !== "pipeline") throw new Error("pipeline plan expected");
  const points = okPoints(model);
  for (const st of plan.stagePlans) assert.ok(points.includes(st.from) && points.includes(st.to), `stage ${st.stage} [${st.from}, ${st.to}) starts and ends at cut points`);
  assert.equal(plan.stagePlans.length, 3);
  assert.match(plan.explain(), /at the \d+ of 26 points between layers where one tensor crosses/);
  const names = summarizeModel(model).layers.map((l) => l.name);
  assert.throws(
    () => plan.place([0, 5], 0),
    (e: unknown) => e instanceof ConfigError && e.message.includes(`inside the block from "${names[3]}" to "${names[8]}"`) && /before layer 3 or 9/.test(e.hint ?? ""),
  );
  const placed = plan.place([0, 9], 0) as unknown as PipelinePlan;
  assert.deepEqual([placed.stagePlans[0]!.from, placed.stagePlans[0]!.to], [0, 9]);
  // The small residual model's skip is its input: every point is a cut, and stage 1 gets the input from the driver too.
  const small = residualClassifier();
  const three = cluster().workers(3).strategy("pipeline").plan(small) as unknown as PipelinePlan;
  assert.deepEqual(three.stagePlans.map((st) => [st.feeds, st.heads]), [[[0], []], [[0], []], [[], [0]]]);
  // The CNN has 10 cut points inside: 11 stages at most.
  assert.throws(
    () => cluster().workers(12).strategy("pipeline").plan(model),
    (e: unknown) => e instanceof ConfigError && /12 stages need 11 point\(s\) where exactly one tensor passes/.test(e.message) && e.message.includes(names[8]!),
  );
  const shared = tf.layers.dense({ units: 3, name: "twice" });
  const a = tf.input({ shape: [3] });
  const twice = tf.model({ inputs: a, outputs: shared.apply(shared.apply(a)) as tf.SymbolicTensor });
  assert.throws(() => cluster().workers(2).strategy("pipeline").plan(twice), (e: unknown) => e instanceof ModelError && /"twice" \(Dense\) is called 2 times/.test(e.message) && /strategy\("data"\)/.test(e.hint ?? ""));
});

test("stages built from a functional topology, run one after another, compute the whole model", async () => {
  for (const [model, bounds] of [
    [residualCnn(), [0, 9, 17, 27]],
    [transformerStack(), [0, 7, 14, 16]],
  ] as const) {
    const topology = model.toJSON(null, false) as unknown as Record<string, unknown>;
    const cuts = summarizeModel(model).cuts;
    const stages: tf.LayersModel[] = [];
    const back: ReturnType<typeof hostCopies>[] = [];
    for (let s = 0; s + 1 < bounds.length; s++) {
      const st = { from: bounds[s]!, to: bounds[s + 1]! };
      const c = cuts[st.from]!;
      assert.ok(c.ok);
      const topo = stageTopology(topology, st.from, st.to, c.shape.slice(1).map((d) => d ?? 1), s);
      const order = (m: tf.LayersModel) => stageWeightOrder(m, topology, st.from, st.to);
      const built = await buildModel(topo, hostCopies(stageVariables(model, st).map((v) => v.read())), order);
      stages.push(built);
      back.push(hostCopies(order(built).map((v) => v.read())));
    }
    const x = tf.randomUniform([3, ...(model.inputs[0]!.shape.slice(1) as number[])], -1, 1, "float32", 5);
    const want = (model.predict(x) as tf.Tensor).dataSync();
    let h: tf.Tensor = x;
    for (const st of stages) h = st.predict(h) as tf.Tensor;
    const got = h.dataSync();
    want.forEach((v, i) => assert.ok(Math.abs(v - got[i]!) < 1e-5, `${model.name}: output ${i} ${got[i]} vs ${v}`));
    // The stages' weights, read back in their order, are the model's own in the model's order.
    const whole = modelOrder(model, bounds.slice(1).map((to, s) => ({ from: bounds[s]!, to })), back);
    model.weights.forEach((w, i) => assert.deepEqual(Array.from(whole[i]!.data), Array.from(w.read().dataSync()), `${model.name}: weight ${w.name}`));
  }
});
