import assert from "node:assert/strict";
import { test } from "node:test";
import type { FitContext } from "../../sdk/driver/fit-context";
import type { MeshtrainError } from "../../sdk/errors/errors";
import type { StepRecord } from "../../sdk/metrics/records";
import { evictingSlow } from "../../sdk/strategies/data/evict-slow";

/** Workers as the watch sees them: a rank, a name, and whether (and why) they were let go. */
function members(n: number): { ctx: FitContext; evicted: Map<number, MeshtrainError> } {
  const evicted = new Map<number, MeshtrainError>();
  const workers = Array.from({ length: n }, (_, rank) => ({
    rank,
    name: `worker rank ${rank}`,
    address: `ws://127.0.0.1:${7000 + rank}`,
    lost: undefined as MeshtrainError | undefined,
    markLost(err: MeshtrainError) {
      this.lost = err;
      evicted.set(rank, err);
    },
  }));
  return { ctx: { workers } as unknown as FitContext, evicted };
}

const step = (s: number, computeMs: readonly number[]): StepRecord =>
  ({ step: s, workers: computeMs.map((ms, rank) => ({ rank, computeMs: ms })) }) as unknown as StepRecord;

test("a worker over the bound for `steps` steps in a row, after its warm-up, is let go once, naming the bound and the ratio", () => {
  const { ctx, evicted } = members(3);
  const seen: number[] = [];
  const watch = evictingSlow(ctx, { slowerThan: 3, steps: 3 }, 1, (r) => void seen.push(r.step));
  for (let s = 0; s < 4; s++) watch(step(s, [20, 20, 100]));
  assert.equal(evicted.size, 0, "two warm-up steps, then two slow ones: not yet");
  watch(step(4, [20, 20, 100]));
  assert.deepEqual([...evicted.keys()], [2]);
  assert.match(evicted.get(2)!.message, /worker rank 2 \(ws:\/\/127\.0\.0\.1:7002\) was evicted at step 4: its compute took more than 3x the others' median for 3 steps in a row \(5\.0x in the last\)/);
  watch(step(5, [20, 20, 100]));
  assert.equal(evicted.size, 1, "a step that still holds the evicted worker evicts nobody else");
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5], "the user's onStep sees every step");
});

test("a streak broken by one fast step starts again; a gap under the floor, or going below minWorkers, evicts nobody", () => {
  const broken = members(2);
  const w = evictingSlow(broken.ctx, { slowerThan: 2, steps: 3 }, 1, undefined);
  for (const ms of [50, 50, 50, 50, 10, 50, 50]) w(step(0, [10, ms]));
  assert.equal(broken.evicted.size, 0);
  const small = members(2);
  const f = evictingSlow(small.ctx, { slowerThan: 2, steps: 1 }, 1, undefined);
  for (let s = 0; s < 10; s++) f(step(s, [1, 9]));
  assert.equal(small.evicted.size, 0, "9x slower, but 8 ms is noise on a shared machine");
  const floor = members(2);
  const g = evictingSlow(floor.ctx, { slowerThan: 2, steps: 1 }, 2, undefined);
  for (let s = 0; s < 10; s++) g(step(s, [10, 100]));
  assert.equal(floor.evicted.size, 0, "evicting would leave fewer than minWorkers");
});
