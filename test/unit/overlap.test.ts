import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster } from "../../sdk/cluster/builder";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { chooseOverlap } from "../../sdk/plan/overlap";
import { makePlan } from "../../sdk/strategies/make-plan";
import { runOverlapLine } from "../../sdk/strategies/data/overlap-lines";

const on = (host: string, cpus: number) => ({ host, cpus });

test("overlap 'auto' is on only where every worker's machine has a core to spare for the all-reduce's thread", () => {
  assert.equal(chooseOverlap("auto", 2, [on("a", 4), on("a", 4)]).on, true);
  assert.equal(chooseOverlap("auto", 3, [on("a", 2), on("b", 2), on("c", 2)]).on, true);
  const crowded = chooseOverlap("auto", 2, [on("a", 2), on("a", 2)]);
  assert.equal(crowded.on, false);
  assert.match(crowded.why, /no core to spare .*\(2 on a's 2 core\(s\)\)/);
  // One crowded machine among roomy ones turns it off for all: every replica must chain the same all-reduces.
  const mixed = chooseOverlap("auto", 3, [on("a", 8), on("b", 1), on("a", 8)]);
  assert.equal(mixed.on, false);
  assert.match(mixed.why, /1 on b's 1 core\(s\)/);
  assert.doesNotMatch(mixed.why, /on a's/);
});

test("overlap as asked, off for one worker, and on (DDP's default) where the machines are not known", () => {
  assert.deepEqual(chooseOverlap(true, 2, [on("a", 2), on("a", 2)]), { on: true, why: "asked for with overlap: true" });
  assert.deepEqual(chooseOverlap(false, 2, [on("a", 8), on("b", 8)]), { on: false, why: "asked for with overlap: false" });
  assert.equal(chooseOverlap(true, 1, [on("a", 8)]).on, false);
  assert.match(chooseOverlap("auto", 2, undefined).why, /not known before launch/);
  assert.equal(chooseOverlap("auto", 2, undefined).on, true);
  const unsaid = chooseOverlap("auto", 2, [on("a", 8), {}]);
  assert.equal(unsaid.on, true);
  assert.match(unsaid.why, /not every worker said/);
});

test("a data plan carries the choice and says it in toString() and explain(); a run's notes say what really ran", () => {
  const model = tf.sequential({ layers: [tf.layers.dense({ inputShape: [8], units: 4 })] });
  const devices = (cpus: number) => [0, 1].map(() => ({ backend: "native", device: "cpu", memoryBytes: 2 ** 32, host: "box", cpus }));
  const crowded = makePlan(cluster().workers(2).strategy("data").spec(), summarizeModel(model), { batchSize: 8, devices: devices(2) });
  assert.equal(crowded.strategy, "data");
  if (crowded.strategy !== "data") return;
  assert.equal(crowded.overlap.on, false);
  assert.match(String(crowded), /all-reduce: ring .*; after the backward pass/);
  assert.match(crowded.explain(), /no overlap: one all-reduce after the backward pass: no core to spare/);
  const roomy = makePlan(cluster().workers(2).strategy("data").spec(), summarizeModel(model), { batchSize: 8, devices: devices(4) });
  if (roomy.strategy !== "data") return assert.fail("a data plan");
  assert.equal(roomy.overlap.on, true);
  assert.match(String(roomy), /in buckets during the backward pass/);
  const asked = makePlan(cluster().workers(2).strategy("data", { overlap: true }).spec(), summarizeModel(model), { batchSize: 8, devices: devices(2) });
  if (asked.strategy !== "data") return assert.fail("a data plan");
  assert.equal(asked.overlap.on, true);
  const native = { path: "native" as const, why: "" };
  assert.match(runOverlapLine(roomy.overlap, native, { native: true }), /^overlap: .*in buckets/);
  assert.match(runOverlapLine(roomy.overlap, { path: "websocket", why: "" }, { native: true }), /^no overlap: the WebSocket data plane/);
  assert.match(runOverlapLine(roomy.overlap, native, { native: false, why: "dropout" }), /^no overlap: TF.js's autodiff/);
  assert.match(runOverlapLine(crowded.overlap, native, { native: true }), /^no overlap: .*no core to spare/);
  // Where the rule cannot tell, the fit times both ways: the plan says so, and the run what it found.
  assert.equal(crowded.overlap.timed, true);
  assert.equal(roomy.overlap.timed, undefined);
  assert.equal(asked.overlap.timed, undefined);
  assert.match(crowded.explain(), /no core to spare .*; a fit of 76 steps or more times its steps 3-18 both ways/);
  assert.match(String(crowded), /after the backward pass, or in buckets during it if the fit's first steps time that faster/);
  const timed = { kept: true, steps: [3, 18] as [number, number], onMs: 10.04, offMs: 11.5, from: 15 };
  assert.equal(runOverlapLine(crowded.overlap, native, { native: true }, timed), "overlap: timed both ways, in buckets during the backward pass 10.0 ms a step, one all-reduce after it 11.5 ms (each way's median on the slower replica, steps 3-18 alternating): buckets kept from step 15, the faster by 3% or more");
  assert.match(runOverlapLine(crowded.overlap, native, { native: true }, { ...timed, kept: false }), /^no overlap: timed both ways, .*: one all-reduce after the backward pass kept from step 15, buckets not 3% faster \(no core to spare/);
  assert.match(runOverlapLine(crowded.overlap, native, { native: true }, { kept: false, skipped: "too few" }), /^no overlap: one all-reduce after the backward pass: no core to spare .*; too few$/);
  const elastic = makePlan(cluster().workers(2).strategy("data", { elastic: { minWorkers: 1 } }).spec(), summarizeModel(model), { batchSize: 8, devices: devices(2) });
  assert.equal(elastic.strategy === "data" && elastic.overlap.timed, undefined, "an elastic fit's members change under it: the rule's choice");
  model.dispose();
});

test("strategy('data', { overlap }) accepts auto, true and false, and refuses anything else by name", () => {
  const spec = cluster().workers(2).strategy("data", { overlap: false }).spec().strategy;
  assert.deepEqual(spec, { name: "data", options: { feed: "driver", overlap: false, batchNorm: "replica" } });
  assert.throws(() => cluster().strategy("data", { overlap: "yes" as unknown as boolean }), /overlap/);
});
