import assert from "node:assert/strict";
import { test } from "node:test";
import { UnitReduces } from "../../sdk/roles/data/unit-reduces";
import { StepCollectives } from "../../sdk/roles/data/step-collectives";
import type { Unit } from "../../sdk/roles/data/shard-unit";
import type { HostIO } from "../../sdk/roles/role";
import { wholeHook } from "../../sdk/roles/data/hooks/whole-hook";

/**
 * With overlap a unit's reduce-scatter runs while the backward pass computes the next unit into
 * the other buffer, awaited only before that buffer is written again; without, each is awaited
 * at once. A reduce-scatter here completes only when the test says so.
 */

const unit = (k: number, from: number): Unit => ({ ops: [k], layers: { layer: k }, from, length: 4, vars: [], start: 0, end: 4, kept: from, parts: [] });

function links(): { io: HostIO; started: Float32Array[]; complete(i: number): void } {
  const started: Float32Array[] = [];
  const done: Array<() => void> = [];
  const io = {
    reduceScatter: (data: Float32Array) =>
      new Promise<{ data: Float32Array; stats: { waitMs: number; commMs: number; bytesSent: number } }>((resolve) => {
        started.push(data);
        done.push(() => resolve({ data: data.map((v) => 2 * v), stats: { waitMs: 0, commMs: 0, bytesSent: 16 } }));
      }),
  } as unknown as HostIO;
  return { io, started, complete: (i) => done[i]!() };
}

const settled = async (p: Promise<unknown>): Promise<boolean> => {
  let out = false;
  void p.then(() => (out = true));
  await new Promise((r) => setImmediate(r));
  return out;
};

test("with overlap a unit's reduce-scatter runs on while the next unit is written into the other buffer; the shard's gradient is whole after finish()", async () => {
  const gradient = new Float32Array(8);
  const reduces = new UnitReduces(gradient, 4, wholeHook(), new StepCollectives(), true);
  const l = links();
  const [u0, u1] = [unit(0, 0), unit(1, 4)];
  reduces.scratch(u1, true).grads.fill(1);
  assert.equal(await settled(reduces.reduce(u1, l.io, false)), true, "returns with unit 1's reduce-scatter still running");
  const second = reduces.scratch(u0, true).grads;
  assert.notEqual(second.buffer, l.started[0]!.buffer, "unit 0 is written into the other buffer");
  second.fill(3);
  const reducing = reduces.reduce(u0, l.io, false);
  assert.equal(await settled(reducing), false, "before its buffer is written again, unit 1's reduce-scatter must be done");
  l.complete(0);
  assert.equal(await settled(reducing), true);
  const finishing = reduces.finish();
  assert.equal(await settled(finishing), false, "finish() waits for unit 0's");
  l.complete(1);
  await finishing;
  assert.deepEqual([...gradient], [6, 6, 6, 6, 2, 2, 2, 2]);
});

test("without overlap each unit's reduce-scatter is awaited before the backward pass goes on", async () => {
  const gradient = new Float32Array(8);
  const reduces = new UnitReduces(gradient, 4, wholeHook(), new StepCollectives(), false);
  const l = links();
  reduces.scratch(unit(1, 4), true).grads.fill(1);
  const reducing = reduces.reduce(unit(1, 4), l.io, false);
  assert.equal(await settled(reducing), false);
  l.complete(0);
  await reducing;
  assert.deepEqual([...gradient.subarray(4)], [2, 2, 2, 2]);
});
