import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { cluster } from "../../sdk/index";
import { ConfigError } from "../../sdk/errors/errors";
import { planDataParallel } from "../../sdk/strategies/data/planner";
import { DataOptionsSchema } from "../../sdk/strategies/data/options";
import type { StrategyPlanner } from "../../sdk/strategies/strategy";
import { addStrategy } from "../../sdk/strategies/strategy-table";
import { fitsLikeModelFit } from "../helpers/fit-check";
import { smallClassifier } from "../helpers/models";

/**
 * Adding a strategy is its folder and one line in the table (ARCHITECTURE.md's checklist): a toy
 * strategy, registered here as that line, is found by the builder, validates its own options,
 * plans, and trains through real workers as model.fit does, with nothing else in the SDK told
 * its name. It plans data-parallel plans of its own making, which the data strategy's runner runs.
 */
const ToyOptions = z.strictObject({ note: z.string().max(80).default("hello") });

const toy: StrategyPlanner<z.output<typeof ToyOptions>> & { options: typeof ToyOptions } = {
  options: ToyOptions,
  family: "replicas",
  servers: "refused",
  slowdown: false,
  profiled: false,
  check: (o) => {
    if (o.note === "refuse") throw new ConfigError('toy: note "refuse" is refused');
  },
  probesRing: () => false,
  plan: (o, spec, model, po) => planDataParallel(DataOptionsSchema.parse({}), spec, model, { ...po, reasons: [`the toy strategy planned this (${o.note})`] }),
  roles: ["replica"],
};

test("a toy strategy added as one line of the table plans, checks its options and trains like model.fit", async () => {
  addStrategy("toy", toy);
  // The builder's types list the built-in strategies; a strategy added at run time is named through them.
  const builder = cluster().workers(2).strategy("toy" as "data", { note: "from the test" } as never);
  const plan = builder.plan(smallClassifier(6, 3), { batchSize: 24 });
  assert.deepEqual(plan.reasons, ["the toy strategy planned this (from the test)"]);
  assert.match(String(plan), /data-parallel|replica/);
  assert.throws(() => cluster().workers(2).strategy("toy" as "data", { stages: 2 } as never), (e: unknown) => e instanceof ConfigError && /strategy\("toy"\) options/.test((e as Error).message));
  assert.throws(() => cluster().workers(2).strategy("toy" as "data", { note: "refuse" } as never).spec(), /toy: note "refuse" is refused/);
  assert.throws(() => cluster().workers(2).ps(1).strategy("toy" as "data").spec(), /strategy "toy" does not use them/);
  const c = await builder.launch();
  try {
    await fitsLikeModelFit(c, { size: 72, seed: 5 });
  } finally {
    await c.close();
  }
});
