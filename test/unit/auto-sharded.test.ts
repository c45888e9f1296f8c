import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster } from "../../sdk/cluster/builder";
import { ConfigError } from "../../sdk/errors/errors";
import { largestLayerBytes, memoryTotal, estimateReplicaMemory, shardedMemory } from "../../sdk/plan/memory";
import { summarizeModel } from "../../sdk/plan/model-summary";
import type { PlanOptions } from "../../sdk/plan/plans";
import { makePlan } from "../../sdk/strategies/make-plan";
import { nativeLayersWhyNot } from "../../sdk/backends/native/step/compile";

/**
 * strategy("auto") weighs ZeRO-2 and ZeRO-3 where no split into stages fits: here four workers
 * and a model of three equal layers, whose one split (two stages, two replicas) keeps two
 * layers' whole training state on a worker, where ZeRO-3 keeps a quarter of it and one layer
 * gathered; three stages do not make whole replicas of four workers, four need four layers.
 */

const adam = { name: "adam" as const, learningRate: 0.001, beta1: 0.9, beta2: 0.999 };
const devices = (backend = "native") => Array.from({ length: 4 }, () => ({ backend, device: "cpu", memoryBytes: 2 ** 30 }));
const layered = (extra: Partial<Parameters<typeof tf.layers.dense>[0]> = {}): tf.LayersModel =>
  tf.sequential({
    layers: [
      tf.layers.dense({ inputShape: [256], units: 256, activation: "relu", ...extra }),
      tf.layers.dense({ units: 256, activation: "relu" }),
      tf.layers.dense({ units: 256, activation: "softmax" }),
    ],
  });

function need(model: tf.LayersModel, shard: "optimizer" | "gradients" | "parameters"): number {
  const s = summarizeModel(model);
  return memoryTotal(shardedMemory(estimateReplicaMemory(s, { batchSize: 4, optimizer: adam }), shard, 4, largestLayerBytes(s), adam));
}

function planAt(cap: number, model: tf.LayersModel, o: Partial<PlanOptions> = {}) {
  return makePlan(cluster().workers(4).strategy("auto").memory(cap).spec(), summarizeModel(model), { batchSize: 16, optimizer: adam, devices: devices(), nativeLayers: nativeLayersWhyNot(model), ...o });
}

test("auto: where no split into stages fits and ZeRO-1 does not, ZeRO-2 where it fits, else ZeRO-3, saying what each needs", () => {
  const model = layered();
  const [one, two, three] = [need(model, "optimizer"), need(model, "gradients"), need(model, "parameters")];
  assert.ok(three < two && two < one, `ZeRO-3 ${three} < ZeRO-2 ${two} < ZeRO-1 ${one}`);
  const zero2 = planAt(Math.floor((one + two) / 2), model);
  assert.equal(zero2.strategy === "data" ? zero2.shard : zero2.strategy, "gradients");
  const why2 = zero2.explain();
  assert.match(why2, /would need .*, above/);
  assert.match(why2, /2 stages: .*\n.*3 stages: skipped, 4 workers do not form whole replicas of 3 stages/);
  assert.match(why2, /auto chose ZeRO-2 \(shard: "gradients"\): each worker keeps the whole weights and 1\/4 of the gradient and the optimizer's state/);
  const zero3 = planAt(Math.floor((two + three) / 2), model);
  assert.equal(zero3.strategy === "data" ? zero3.shard : zero3.strategy, "parameters");
  assert.match(zero3.explain(), /ZeRO-2 would need .*\n.*auto chose ZeRO-3 \(shard: "parameters"\)/);
  // Tighter than ZeRO-3's need: refused, every option's need said.
  assert.throws(() => planAt(three - 1024, model), (e: unknown) => e instanceof ConfigError && /ZeRO-2 would need .* and ZeRO-3 .* per worker, above/.test(e.message));
});

test("auto: ZeRO-2 and -3 only for what meshtrain's native step computes, on native workers; otherwise refused, saying which part does not", () => {
  const cap = Math.floor((need(layered(), "gradients") + need(layered(), "parameters")) / 2);
  const refused = (o: Partial<PlanOptions>, model: tf.LayersModel, why: RegExp) =>
    assert.throws(() => planAt(cap, model, o), (e: unknown) => e instanceof ConfigError && why.test(e.message), `expected ${why}`);
  refused({}, layered({ kernelRegularizer: tf.regularizers.l2() }), /ZeRO-2 and -3 .*: they work inside meshtrain's native step, and \w+ \(Dense\) has a kernelRegularizer/);
  refused({ loss: "hinge" }, layered(), /native step, which does not compute the hinge loss/);
  refused({ devices: devices("webgpu") }, layered(), /worker 0 runs TF\.js's "webgpu" backend/);
  // Not compiled (a plan made without the model's layers checked): not weighed, saying so.
  refused({ nativeLayers: undefined }, layered(), /not weighed: this plan was made without compiling the model's layers/);
  // The same plan with a loss it computes is ZeRO-3.
  const ok = planAt(cap, layered(), { loss: "categoricalCrossentropy" });
  assert.equal(ok.strategy === "data" ? ok.shard : ok.strategy, "parameters");
});
