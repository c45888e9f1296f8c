import assert from "node:assert/strict";
import { after, before, describe, test, type TestContext } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, ModelError, type Cluster, type TrainingRun } from "../../sdk/index";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import { deepClassifier, maxRelativeDifference, smallConvNet, weightsMoved } from "../helpers/models";
import { modelFitReference } from "../helpers/reference";

/**
 * Model, pipeline and hybrid parallelism over real worker processes and real WebSockets must
 * give the weights single-process model.fit gives on the same batches (relative difference
 * < 1e-4). 50 samples in batches of 12 make each epoch's last batch 2 samples: with 4
 * micro-batches some are empty, and in a hybrid one replica gets 1 sample.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;
const OPTIMIZER: OptimizerSpec = { name: "adam", learningRate: 0.01, beta1: 0.9, beta2: 0.999 };

type Data = ReturnType<typeof datasets.synthetic>;


async function compare(t: TestContext, c: Cluster, make: () => tf.LayersModel, ds: Data, extra: { plan?: ReturnType<Cluster["plan"]> } = {}): Promise<TrainingRun> {
  const o = { epochs: 2, batchSize: 12, seed: 5 };
  const distributed = make();
  const single = make();
  const start = distributed.getWeights().map((w) => w.clone());
  const run = await c.fit(distributed, ds, { ...o, optimizer: OPTIMIZER, loss: "categoricalCrossentropy", ...extra });
  const losses = await modelFitReference(single, ds, { ...o, optimizer: OPTIMIZER });
  assert.ok(weightsMoved(start, distributed), "training changed the weights");
  const diff = maxRelativeDifference(distributed, single);
  t.diagnostic(`largest relative difference from model.fit: ${diff.toExponential(2)}`);
  assert.ok(diff < TOLERANCE, `relative difference ${diff} >= ${TOLERANCE}`);
  assert.equal(run.history.length, losses.length);
  run.history.forEach((s, i) => assert.ok(Math.abs(s.loss - losses[i]!) <= TOLERANCE * Math.max(1, losses[i]!), `step ${i}: loss ${s.loss} vs ${losses[i]}`));
  return run;
}

const vectors = (): Data => datasets.synthetic({ inputShape: [6], classes: 3, size: 50, seed: 3 });
const images = (): Data => datasets.synthetic({ inputShape: [8, 8, 1], classes: 3, size: 50, seed: 4 });
const deep = (): tf.LayersModel => deepClassifier(6, 3, { hidden: 4 });
/** L2 on every hidden layer: each stage's regularizers count in the step's loss, as in model.fit's History. */
const deepL2 = (): tf.LayersModel => deepClassifier(6, 3, { hidden: 4, l2: 0.02 });

describe("2 workers: model and pipeline parallelism", () => {
  let model: Cluster;
  const pipelines: Record<string, Cluster> = {};
  before(async () => {
    model = await cluster().workers(2).strategy("model").launch();
  });
  after(async () => {
    await model?.close();
    for (const c of Object.values(pipelines)) await c.close();
  });

  test("model parallelism: one batch at a time through 2 stages, equal to model.fit", async (t) => {
    const run = await compare(t, model, deep, vectors());
    const step = run.history[3]!;
    assert.deepEqual(step.workers.map((w) => w.actions!.map((a) => `${a.kind}${a.micro}`).join(" ")), ["F0 B0", "F0 B0"]);
    assert.equal(run.plan.strategy, "model");
    // One batch through two stages: each is idle while the other works.
    assert.ok(run.summary().bubble! > 0.3, `bubble ${run.summary().bubble}`);
  });

  test("convolutions split across stages (4-D activations cross the link)", async (t) => {
    await compare(t, model, () => smallConvNet(3), images());
  });

  for (const [schedule, micro] of [["gpipe", 1], ["gpipe", 4], ["1f1b", 3], ["1f1b", 4]] as const) {
    test(`pipeline ${schedule} with ${micro} micro-batch(es) equals model.fit${micro === 3 ? " (L2 on every hidden layer)" : ""}`, async (t) => {
      const key = `${schedule}/${micro}`;
      pipelines[key] ??= await cluster().workers(2).strategy("pipeline", { schedule, microBatches: micro }).launch();
      const run = await compare(t, pipelines[key]!, key === "1f1b/3" ? deepL2 : deep, vectors());
      const step = run.history[2]!;
      for (const w of step.workers) assert.equal(w.actions!.length, 2 * micro);
    });
  }

  test("1F1B holds fewer micro-batches in flight than GPipe, measured on the workers", async () => {
    // The clusters above ran both schedules with 4 micro-batches over 2 stages.
    const gpipe = await pipelines["gpipe/4"]!.fit(deep(), vectors(), { batchSize: 12, seed: 1 });
    const oneF = await pipelines["1f1b/4"]!.fit(deep(), vectors(), { batchSize: 12, seed: 1 });
    const held = (run: TrainingRun, rank: number): number => Math.max(...run.history.map((s) => s.workers[rank]!.inFlightMax!));
    assert.equal(held(gpipe, 0), 4);
    assert.equal(held(oneF, 0), 2);
    assert.equal(held(oneF, 1), 1);
    assert.ok(held(oneF, 0) < held(gpipe, 0));
  });

  test("a placed plan trains with the stages as placed", async (t) => {
    const c = pipelines["1f1b/3"]!;
    const plan = c.plan(deep(), { batchSize: 12 }).place([0, 1], 0);
    const run = await compare(t, c, deep, vectors(), { plan });
    if (run.plan.strategy === "data" || run.plan.strategy === "ps") throw new Error("pipeline plan expected");
    assert.deepEqual(run.plan.stagePlans.map((s) => [s.from, s.to]), [[0, 1], [1, 5]]);
  });
});

describe("4 workers: hybrid of 2 replicas x 2 stages", () => {
  let c: Cluster;
  before(async () => {
    c = await cluster().workers(4).strategy("hybrid", { stages: 2, microBatches: 2, schedule: "gpipe" }).launch();
  });
  after(async () => {
    await c?.close();
  });

  test("each stage's replicas all-reduce their gradients; the result (regularizers in the loss) equals model.fit", async (t) => {
    const run = await compare(t, c, deepL2, vectors());
    const step = run.history[1]!;
    assert.deepEqual(step.workers.map((w) => [w.stage, w.replica]), [[0, 0], [1, 0], [0, 1], [1, 1]]);
    assert.ok(step.workers.every((w) => w.commMs > 0), "every worker took part in an all-reduce");
  });
});

describe("memory caps: too big for one worker, trains when split", () => {
  // 5.2 MiB of parameters, gradients and activations, and 2.4 MiB the runtime grows by in any fit: more than a 6.4 MiB cap holds; its two halves fit.
  const big = (): tf.LayersModel => deepClassifier(256, 10, { hidden: 3, width: 512 });
  const data = (): Data => datasets.synthetic({ inputShape: [256], classes: 10, size: 32, seed: 6 });

  test("one capped worker refuses the model, saying how much it needed; the cluster stays usable", async () => {
    const c = await cluster().workers(1).memory("6.4MiB").launch();
    try {
      await assert.rejects(c.fit(big(), data(), { batchSize: 16, optimizer: "sgd" }), (e: unknown) => {
        assert.ok(e instanceof ModelError, String(e));
        // Its activations are what the native step's arrays take for 16 samples.
        assert.match(e.message, /the whole model needs 7\.6 MiB per replica \(2\.5 MiB parameters, 2\.5 MiB gradients, 0 B optimizer state, \d+ KiB activations for 16 samples, 2\.4 MiB the runtime's own growth\), above this worker's memory cap of 6\.4 MiB/);
        assert.match(e.message, /shard the training state among them, strategy\("data", \{ shard: .*or split the model over them: strategy\("pipeline"\)/);
        return true;
      });
      assert.equal(c.state, "ready");
    } finally {
      await c.close();
    }
  });

  test("two capped workers train it as a pipeline, and auto picks that split by itself", async () => {
    const c = await cluster().workers(2).memory("6.4MiB").strategy("auto").launch();
    try {
      const model = big();
      const plan = c.plan(model, { batchSize: 16, optimizer: "sgd" });
      assert.equal(plan.strategy, "pipeline");
      assert.match(plan.explain(), /but worker \d may use only 6\.4 MiB/);
      const start = model.getWeights().map((w) => w.clone());
      const run = await c.fit(model, data(), { batchSize: 16, optimizer: "sgd", seed: 2 });
      assert.equal(run.plan.strategy, "pipeline");
      assert.equal(run.history.length, 2);
      assert.ok(weightsMoved(start, model));
    } finally {
      await c.close();
    }
  });
});
