import assert from "node:assert/strict";
import { test } from "node:test";
import { cluster, type ClusterBuilder } from "../../sdk/cluster/builder";
import { ConfigError } from "../../sdk/errors/errors";

/**
 * What the builder's types allow per strategy. Each @ts-expect-error line must fail to compile
 * (the build fails if the types ever let it through), and each also fails at run time with a
 * ConfigError, so plain JavaScript users get the same answer.
 */
test("strategy(name, options) takes each strategy's own options, typed", () => {
  const fine: ClusterBuilder[] = [
    cluster().workers(2).strategy("data", { compression: "fp16", overlap: true, feed: "workers" }),
    cluster().workers(4).strategy("hybrid", { stages: 2, microBatches: 8 }),
    cluster().workers(2).ps(1).strategy("ps", { mode: "sync" }),
    cluster().workers(2).strategy("pipeline", { schedule: "gpipe" }),
    cluster().workers(2).strategy("auto"),
  ];
  assert.equal(fine.length, 5);
  const refused: Array<() => unknown> = [
    // @ts-expect-error hybrid needs its stages
    () => cluster().workers(4).strategy("hybrid"),
    // @ts-expect-error data parallelism has no stages
    () => cluster().workers(4).strategy("data", { stages: 2 }),
    // @ts-expect-error a compression that does not exist
    () => cluster().workers(2).strategy("data", { compression: "int8" }),
    // @ts-expect-error parameter servers have no schedule
    () => cluster().workers(2).strategy("ps", { schedule: "1f1b" }),
    // @ts-expect-error not a strategy
    () => cluster().workers(2).strategy("sharding"),
  ];
  for (const r of refused) assert.throws(r, (e: unknown) => e instanceof ConfigError);
});
