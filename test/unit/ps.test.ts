import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster } from "../../sdk/cluster/builder";
import { ConfigError, ProtocolError, TimeoutError } from "../../sdk/errors/errors";
import { shardByBytes } from "../../sdk/strategies/ps/planner";
import { roundRecord } from "../../sdk/strategies/ps/push-records";
import { leadOf, mayStart } from "../../sdk/strategies/ps/ssp";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import type { LoadOf } from "../../sdk/protocol/messages";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import { deepClassifier } from "../helpers/models";
import type { PushRecord } from "../../sdk/metrics/records";
import { ParamServer } from "../../sdk/roles/ps/param-server";
import { createOptimizer } from "../../sdk/model/optimizers";

const configError = (pattern: RegExp) => (e: unknown) => e instanceof ConfigError && pattern.test(e.message);

test("the builder asks for servers with ps() and refuses combinations that cannot work", () => {
  const spec = cluster().workers(4).ps(2).strategy("ps", { mode: "async", staleness: 2 }).slowdown(3, 3).spec();
  assert.deepEqual(spec.servers, { kind: "local", count: 2 });
  assert.deepEqual(spec.strategy, { name: "ps", options: { mode: "async", staleness: 2 } });
  assert.deepEqual(spec.slowdown, { "3": 3 });
  assert.equal(cluster().workers(2).ps(1).strategy("ps").spec().strategy.name, "ps");
  assert.throws(() => cluster().workers(2).strategy("ps").spec(), configError(/needs parameter servers.*\nhelp: add \.ps\(n\)/));
  assert.throws(() => cluster().workers(2).ps(1).strategy("data").spec(), configError(/strategy "data" does not use them/));
  assert.throws(() => cluster().workers(2).ps(1).strategy("ps", { mode: "sync", staleness: 1 }).spec(), configError(/staleness bound is for mode "async"/));
  assert.throws(() => cluster().workers(2).ps(1).strategy("ps").slowdown(2, 3).spec(), configError(/names rank 2, but the cluster has ranks 0 to 1/));
  assert.throws(() => cluster().workers(2).strategy("pipeline").slowdown(1, 3).spec(), configError(/strategies "data" and "ps"/));
  assert.throws(() => cluster().workers(2).slowdown(0, 0.5), configError(/factor/));
  assert.throws(() => cluster().workers(2).ps(0), configError(/ps\(n\)/));
  assert.throws(
    () => cluster().connect(["ws://10.0.0.2:7070"]).token("x".repeat(16)).ps(1).strategy("ps").spec(),
    configError(/remote workers cannot reach/),
  );
});

test("shards are balanced by bytes, largest first, and keep model order inside each server", () => {
  const v = (shape: number[]) => ({ layer: 0, name: `v${shape.join("x")}`, shape });
  const shards = shardByBytes([v([100, 10]), v([10]), v([10, 50]), v([50]), v([50, 5])], 2);
  assert.deepEqual(shards.map((s) => s.map((x) => x.index)), [[0], [1, 2, 3, 4]]);
  assert.deepEqual(shards.map((s) => s.reduce((a, x) => a + x.bytes, 0)), [4000, 4 * (10 + 500 + 50 + 250)]);
  // Every variable exactly once, whatever the number of servers.
  for (const servers of [1, 2, 3, 7]) {
    const all = shardByBytes([v([3, 4]), v([4]), v([4, 2]), v([2])], servers).flat().map((x) => x.index).sort();
    assert.deepEqual(all, [0, 1, 2, 3]);
  }
});

test("a parameter-server plan says who holds what, in text and in its diagram", () => {
  const model = deepClassifier(8, 3, { hidden: 2, width: 16 });
  const plan = cluster().workers(3).ps(2).strategy("ps", { mode: "sync" }).slowdown(2, 3).plan(model, { batchSize: 24 });
  if (plan.strategy !== "ps") throw new Error("ps plan expected");
  assert.equal(plan.servers.length, 2);
  assert.equal(plan.servers.reduce((a, s) => a + s.bytes, 0), plan.gradientBytes);
  assert.deepEqual(plan.batch?.perReplica, [8, 8, 8]);
  assert.deepEqual(plan.workers.map((w) => w.slowdown), [1, 1, 3]);
  assert.match(String(plan), /parameter-server plan: 3 worker\(s\), 2 server\(s\), sync/);
  assert.match(String(plan), /rank 2 is slowed down 3x on purpose/);
  assert.match(plan.explain(), /split by bytes/);
  assert.throws(() => plan.place([0, 1], 0), configError(/under parameter servers every worker holds all layers/));
  const svg = plan.draw();
  assert.equal(svg.match(/>server \d</g)?.length, 2);
  assert.equal(svg.match(/>rank \d</g)?.length, 3);
  assert.match(svg, />3x slower</);
  // A pull and a push line between every worker and every server.
  assert.equal(svg.match(/marker-end="url\(#ps-arrow-pull\)"/g)?.length, 6);
  assert.equal(svg.match(/marker-end="url\(#ps-arrow-push\)"/g)?.length, 6);
});

test("the stale-synchronous rule: at most k steps ahead of the slowest live worker", () => {
  assert.equal(leadOf(5, [3, 5, 4]), 2);
  assert.equal(leadOf(5, [3, null, 4]), 2);
  assert.equal(leadOf(5, [null, null]), 0);
  assert.ok(mayStart(5, [3, 5], 2));
  assert.ok(!mayStart(6, [3, 5], 2));
  assert.ok(mayStart(6, [3, 5], null));
  // k = 0: only the slowest may start, and only once it is level with the others.
  assert.ok(mayStart(3, [3, 3], 0));
  assert.ok(!mayStart(4, [3, 4], 0));
  // A departed worker (null) no longer holds the others back.
  assert.ok(mayStart(9, [null, 8], 1));
});

test("async rounds: samples and losses add up, and the slowest rank is the straggler", () => {
  const push = (rank: number, computeMs: number, loss: number, samples = 8): PushRecord => ({
    rank, clock: 0, epoch: 0, samples, loss, version: 0, staleness: 0, lead: 0, startMs: 10 * rank, endMs: 100 + rank, computeMs, pullMs: 1, pushMs: 1, waitMs: 0, slowdownMs: 0, sentBytes: 100 * (rank + 1),
  });
  const r = roundRecord(4, [push(0, 5, 1), push(1, 30, 2, 4), push(0, 5, 1)], 50);
  assert.equal(r.step, 4);
  assert.equal(r.samples, 20);
  assert.ok(Math.abs(r.loss - (8 + 8 + 8) / 20) < 1e-12);
  assert.equal(r.straggler, 1);
  assert.equal(r.endMs, 101);
  assert.equal(r.ms, 51);
  assert.deepEqual(r.workers.map((w) => [w.rank, w.computeMs]), [[0, 10], [1, 30]]);
  // A round's bytes are every push a worker made in it.
  assert.deepEqual(r.workers.map((w) => w.sentBytes), [200, 200]);
});

function serverLoad(mode: "async" | "sync", workers: number, shapes: number[][], optimizer: OptimizerSpec, stateShapes: number[][] = []): LoadOf<"ps-server"> {
  return {
    type: "load", v: PROTOCOL_VERSION, id: 1, role: "ps-server", optimizer, loss: "meanSquaredError", stepTimeoutMs: 2000,
    index: 0, mode, workers, variables: shapes.map((shape, index) => ({ index, shape })), state: stateShapes.map((shape, index) => ({ index, shape })),
    attachments: [...shapes, ...stateShapes].map((shape) => ({ dtype: "float32" as const, shape })),
  };
}

/** A push as a worker sends it: gradient, state change, then the flag (1: drop it). */
function pushOf(values: number[], flag = 0): Float32Array {
  return Float32Array.from([...values, flag]);
}

test("a sync server applies one update from the sum of every worker's push, as TF.js's optimizer would", async () => {
  const optimizer: OptimizerSpec = { name: "adam", learningRate: 0.05, beta1: 0.9, beta2: 0.999, epsilon: 1e-7 };
  const init = [Float32Array.from([1, -2, 3, 0.5]), Float32Array.from([0.25])];
  const shapes = [[2, 2], [1]];
  const server = ParamServer.load(serverLoad("sync", 2, shapes, optimizer), init.map((data, i) => ({ data: Float32Array.from(data), shape: shapes[i]! })), 2000);
  const vars = init.map((d, i) => tf.variable(tf.tensor(d, shapes[i]!)));
  const opt = createOptimizer(optimizer);
  for (let step = 0; step < 3; step++) {
    const g0 = Float32Array.from([0.1 * (step + 1), -0.2, 0.3, 0.05, -0.4]);
    const g1 = Float32Array.from([0.2, 0.1 * step, -0.1, 0.5, 0.3]);
    const pulled = server.pull(step + 1);
    // Pushes may arrive in any order; the update is the same.
    assert.deepEqual(server.push(1, step, step, pushOf([...g1])), { version: step + 1, staleness: 0 });
    assert.equal(server.version, step);
    assert.deepEqual(server.push(0, step, step, pushOf([...g0])), { version: step + 1, staleness: 0 });
    assert.equal(server.version, step + 1);
    assert.equal((await pulled).version, step + 1);
    const sum = g0.map((v, i) => v + g1[i]!);
    opt.applyGradients({ [vars[0]!.name]: tf.tensor(sum.subarray(0, 4), [2, 2]), [vars[1]!.name]: tf.tensor(sum.subarray(4), [1]) });
  }
  const want = Float32Array.from([...vars[0]!.dataSync(), ...vars[1]!.dataSync()]);
  const got = (await server.values());
  got.forEach((v, i) => assert.ok(Math.abs(v - want[i]!) < 1e-6, `value ${i}: ${v} vs ${want[i]}`));
  assert.ok(server.wasApplied(0, 2) && server.wasApplied(1, 2) && !server.wasApplied(0, 3));
  assert.throws(() => server.push(0, 7, 3, new Float32Array(6)), (e: unknown) => e instanceof ProtocolError && /pushed for step 7 while parameter server 0 collects step 3/.test(e.message));
  assert.throws(() => server.push(0, 3, 3, new Float32Array(5)), (e: unknown) => e instanceof ProtocolError && /pushed 5 values to parameter server 0, which takes 6 \(5 gradient, 0 state, 1 flag\)/.test(e.message));
  server.dispose();
});

test("an async server applies pushes as they come and counts the updates each one missed", async () => {
  const optimizer: OptimizerSpec = { name: "sgd", learningRate: 0.5 };
  const server = ParamServer.load(serverLoad("async", 2, [[2]], optimizer), [{ data: Float32Array.from([1, 1]), shape: [2] }], 2000);
  assert.deepEqual(server.push(0, 0, 0, pushOf([1, 0])), { version: 1, staleness: 0 });
  assert.deepEqual(server.push(1, 0, 0, pushOf([0, 1])), { version: 2, staleness: 1 });
  assert.deepEqual(server.push(0, 1, 1, pushOf([1, 1])), { version: 3, staleness: 1 });
  assert.deepEqual([...(await server.values())], [0, 0]);
  server.dispose();
});

test("servers hold model state: sync moves it by the sum of the workers' weighted changes, async adds each push's change", async () => {
  const sgd: OptimizerSpec = { name: "sgd", learningRate: 1 };
  const sync = ParamServer.load(serverLoad("sync", 2, [[1]], sgd, [[2]]), [{ data: Float32Array.from([1]), shape: [1] }, { data: Float32Array.from([0, 1]), shape: [2] }], 2000);
  assert.deepEqual([...(await sync.values())], [1, 0, 1]);
  // Weighted changes 0.25 x (0.4, -0.2) and 0.75 x (0.8, 0.2): the state moves to the workers' weighted mean.
  sync.push(0, 0, 0, pushOf([0.5, 0.1, -0.05]));
  sync.push(1, 0, 0, pushOf([0.25, 0.6, 0.15]));
  const after = [...(await sync.pull(1)).data];
  [0.25, 0.7, 1.1].forEach((want, i) => assert.ok(Math.abs(after[i]! - want) < 1e-6, `value ${i}: ${after[i]} vs ${want}`));
  sync.dispose();
  const async = ParamServer.load(serverLoad("async", 2, [[1]], sgd, [[1]]), [{ data: Float32Array.from([0]), shape: [1] }, { data: Float32Array.from([5]), shape: [1] }], 2000);
  async.push(0, 0, 0, pushOf([1, 0.5]));
  async.push(1, 0, 0, pushOf([1, -2]));
  assert.deepEqual([...(await async.values())], [-2, 3.5]);
  async.dispose();
});

test("a flagged push changes nothing: async drops it alone (handled, not counted as an update), sync drops its whole step", async () => {
  const sgd: OptimizerSpec = { name: "momentum", learningRate: 0.1, momentum: 0.9, useNesterov: false };
  const async = ParamServer.load(serverLoad("async", 2, [[1]], sgd, [[1]]), [{ data: Float32Array.from([1]), shape: [1] }, { data: Float32Array.from([2]), shape: [1] }], 2000);
  assert.deepEqual(async.push(0, 0, 0, pushOf([0, 0], 1)), { version: 0, staleness: 0 });
  assert.deepEqual([...(await async.values())], [1, 2]);
  assert.ok(async.wasApplied(0, 0), "a dropped push is not handed out again");
  async.dispose();
  const sync = ParamServer.load(serverLoad("sync", 2, [[1]], sgd, [[1]]), [{ data: Float32Array.from([1]), shape: [1] }, { data: Float32Array.from([2]), shape: [1] }], 2000);
  sync.push(0, 0, 0, pushOf([3, 0.5]));
  sync.push(1, 0, 0, pushOf([0, 0], 1));
  const pulled = await sync.pull(1);
  assert.equal(pulled.version, 1, "the step ends, so the workers' next pulls are answered");
  assert.deepEqual([...pulled.data], [1, 2]);
  // The next step trains as if the dropped one never happened (momentum starts from zero).
  sync.push(0, 1, 1, pushOf([1, 0]));
  sync.push(1, 1, 1, pushOf([1, 0]));
  assert.ok(Math.abs((await sync.values())[0]! - (1 - 0.1 * 2)) < 1e-6);
  sync.dispose();
});

test("a version's pulls share one read of the values, in shared memory no update writes to; the sum goes into rank 0's push", async () => {
  const sgd: OptimizerSpec = { name: "sgd", learningRate: 1 };
  const server = ParamServer.load(serverLoad("sync", 2, [[2]], sgd), [{ data: Float32Array.from([1, 1]), shape: [2] }], 2000);
  const [a, b] = await Promise.all([server.pull(0), server.pull(0)]);
  assert.equal(a.data, b.data, "one read for both pulls of version 0");
  assert.ok(a.data.buffer instanceof SharedArrayBuffer, "shared with the communication thread, not handed over");
  const next = [server.pull(1), server.pull(1)];
  const g0 = pushOf([0.5, 0.25]);
  server.push(0, 0, 0, g0);
  server.push(1, 0, 0, pushOf([0.5, 0.5]));
  const [c, d] = await Promise.all(next);
  assert.equal(c.data, d.data);
  assert.notEqual(c.data, a.data, "a new version, a new read");
  assert.deepEqual([...a.data], [1, 1], "what version 0's pulls were given stays as it was");
  assert.deepEqual([...c.data], [0, 0.25]);
  assert.deepEqual([...g0], [1, 0.75, 0], "rank 0's push held the sum");
  // A checkpoint's values are a copy of their own.
  assert.notEqual((await server.weights()).tensors[0]!.data, c.data);
  server.dispose();
});

test("a sync pull that waits too long names the workers whose pushes never came", async () => {
  const server = ParamServer.load(serverLoad("sync", 3, [[1]], { name: "sgd", learningRate: 0.1 }), [{ data: Float32Array.from([0]), shape: [1] }], 150);
  server.push(1, 0, 0, pushOf([1]));
  await assert.rejects(server.pull(1), (e: unknown) => e instanceof TimeoutError && /waited 150 ms for the pushes of step 0 from worker rank\(s\) 0, 2/.test(e.message));
  server.dispose();
});

test("elastic sync: a stand-in push for a rank the server has had is dropped, one it lacks completes the step; after a regroup the members' pushes make a step and others are refused", async () => {
  const sgd: OptimizerSpec = { name: "sgd", learningRate: 1 };
  const server = ParamServer.load(serverLoad("sync", 3, [[1]], sgd), [{ data: Float32Array.from([0]), shape: [1] }], 2000);
  server.push(0, 0, 0, pushOf([1]));
  server.push(1, 0, 0, pushOf([2]));
  // Rank 1 is lost; another worker pushes rank 1's part again (dropped: the server has it) and rank 2's (it lacked it).
  assert.deepEqual(server.push(1, 0, 0, pushOf([100]), undefined, true), { version: 1, staleness: 0 });
  assert.equal(server.version, 0);
  assert.throws(() => server.push(1, 0, 0, pushOf([100])), (e: unknown) => e instanceof ProtocolError && /pushed twice/.test(e.message));
  server.push(2, 0, 0, pushOf([4]), undefined, true);
  assert.equal(server.version, 1);
  assert.deepEqual([...(await server.values())], [-7]);
  // A stand-in for a step already applied changes nothing.
  server.push(2, 0, 0, pushOf([50]), undefined, true);
  assert.deepEqual([...(await server.values())], [-7]);
  const regroup = (members: number[]) => server.answer({ type: "regroup", v: PROTOCOL_VERSION, id: 9, members }, [])!;
  assert.deepEqual((await regroup([2, 0])).draft, { type: "regrouped", re: 9, version: 1 });
  assert.throws(() => server.push(1, 1, 1, pushOf([1])), (e: unknown) => e instanceof ProtocolError && /rank 1 pushed to a sync server whose steps are made by rank\(s\) 0, 2/.test(e.message));
  server.push(2, 1, 1, pushOf([3]));
  await assert.rejects(regroup([0]), /holds 1 push\(es\) of step 1: it regroups between steps/);
  server.push(0, 1, 1, pushOf([1]));
  assert.equal(server.version, 2);
  assert.deepEqual([...(await server.values())], [-11]);
});
