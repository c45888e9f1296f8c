import assert from "node:assert/strict";
import { test } from "node:test";
import { choicesOfLoad, refusedPair, type DataChoices } from "../../sdk/protocol/data-option-pairs";
import { cluster } from "../../sdk/index";
import { ConfigError } from "../../sdk/errors/errors";

/**
 * One list of the data-parallel options that cannot work together serves the builder, the fit
 * and a worker's load: each pair is refused where both of its options are known, and nowhere
 * one of them is not.
 */
const PLAIN: DataChoices = {
  compression: "none",
  shard: "none",
  syncEvery: 0,
  batchNorm: "replica",
  elastic: false,
  feed: "driver",
  checkpoint: false,
  accumulate: 1,
};

const PAIRS: Array<[Partial<DataChoices>, RegExp]> = [
  [{ syncEvery: 4, batchNorm: "sync" }, /batchNorm "sync" all-reduces statistics within every step/],
  [{ shard: "optimizer", syncEvery: 4 }, /shard "optimizer" with sync/],
  [{ shard: "gradients", compression: "powersgd" }, /shard "gradients" with compression powersgd/],
  [{ shard: "parameters", batchNorm: "sync" }, /shard "parameters" with batchNorm "sync"/],
  [{ elastic: true, feed: "workers" }, /it needs feed "driver"/],
  [{ elastic: true, compression: "powersgd" }, /PowerSGD keeps each replica's error/],
  [{ elastic: true, batchNorm: "sync" }, /an elastic fit re-forms its ring between steps only/],
  [{ elastic: true, checkpoint: true }, /elastic training and checkpoints do not go together yet/],
  [{ elastic: true, shard: "optimizer" }, /elastic training with shard "optimizer" needs checkpoints/],
  [{ syncEvery: 3, checkpoint: true }, /checkpoints and sync every 3 steps/],
  [{ batchNorm: "sync", accumulate: 2 }, /accumulate 2 with batchNorm "sync"/],
];

test("each pair is refused with its reason where both are known, and not where one is unknown", () => {
  assert.equal(refusedPair(PLAIN), undefined);
  for (const [pair, why] of PAIRS) {
    const refused = refusedPair({ ...PLAIN, ...pair });
    assert.ok(
      refused && why.test(refused.message) && refused.hint.length > 0,
      `${JSON.stringify(pair)}: ${refused?.message}`,
    );
    // Each field alone, the other unknown: nothing to refuse yet.
    for (const key of Object.keys(pair) as Array<keyof DataChoices>) {
      const partial: Record<string, unknown> = { ...pair };
      delete partial[key];
      const rest = Object.fromEntries(Object.entries(PLAIN).filter(([k]) => k !== key && !(k in pair)));
      const alone = refusedPair({ ...rest, ...partial } as DataChoices);
      assert.equal(alone, undefined, `${JSON.stringify(pair)} without ${key}: ${alone?.message}`);
    }
  }
});

test("a worker reads the pairs off its load; the builder off the options", () => {
  const load = { hook: { kind: "powersgd" as const, rank: 2 }, sum: { kind: "zero-1" as const, over: 2 } };
  assert.match(refusedPair(choicesOfLoad(load))!.message, /shard "optimizer" with compression powersgd/);
  assert.equal(refusedPair(choicesOfLoad({ hook: { kind: "fp16" }, sum: { kind: "zero-3", over: 2 } })), undefined);
  assert.match(
    refusedPair(choicesOfLoad({ sum: { kind: "zero-2", over: 2 }, batchNorm: "sync" }))!.message,
    /shard "gradients" with batchNorm "sync"/,
  );
  assert.throws(
    () =>
      cluster()
        .workers(2)
        .strategy("data", { shard: "parameters", compression: { name: "powersgd", rank: 2 } })
        .spec(),
    (e: unknown) =>
      e instanceof ConfigError && /shard "parameters" with compression powersgd/.test((e as Error).message),
  );
  assert.throws(
    () =>
      cluster()
        .workers(2)
        .strategy("data", { elastic: { minWorkers: 1 }, batchNorm: "sync" })
        .spec(),
    ConfigError,
  );
});
