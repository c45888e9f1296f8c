import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type Cluster, type Dataset } from "../../sdk/index";
import { ConfigError } from "../../sdk/errors/errors";
import { maxRelativeDifference } from "../helpers/models";
import { modelFitReference } from "../helpers/reference";
import { anyLengthLstm, frozenNested, gan, maskedLstm, nestedOnSequences, paddedIds } from "../helpers/nested-models";

/**
 * Other people's models on 2 worker processes, each against model.fit on the same batches:
 * nested models (frozen as a whole, as a GAN's combined model holds its discriminator, or
 * called on other shapes than they were built for), masks that must not be dropped between
 * stages, and sequences whose length the model leaves open.
 */

tf.enableProdMode();
const TOLERANCE = 1e-5;
const sgd = (learningRate: number) => ({ name: "sgd" as const, learningRate });

async function equalsModelFit(c: Cluster, make: () => tf.LayersModel, data: Dataset, o: Parameters<typeof modelFitReference>[2]): Promise<tf.LayersModel> {
  const model = make();
  const frozenBefore = model.nonTrainableWeights.map((w) => w.read().dataSync().slice());
  await c.fit(model, data, o);
  const ref = make();
  await modelFitReference(ref, data, o);
  assert.ok(maxRelativeDifference(model, ref) < TOLERANCE, `differs from model.fit by ${maxRelativeDifference(model, ref)}`);
  // Frozen weights stay as they were, as model.fit leaves them.
  model.nonTrainableWeights.forEach((w, i) => assert.deepEqual(w.read().dataSync(), frozenBefore[i]));
  return model;
}

const six = (): Dataset => datasets.synthetic({ inputShape: [6], classes: 3, size: 32, seed: 4 });
const base = { epochs: 2, batchSize: 8, seed: 3, loss: "categoricalCrossentropy" as const, optimizer: sgd(0.1) };

for (const [strategy, launch] of [
  ["data", () => cluster().workers(2).strategy("data")],
  ["sync parameter servers", () => cluster().workers(2).ps(1).strategy("ps", { mode: "sync" })],
  ["a 2-stage pipeline", () => cluster().workers(2).strategy("pipeline")],
] as const) {
  describe(`nested models under ${strategy}`, () => {
    let c: Cluster;
    before(async () => {
      c = await launch().launch();
    });
    after(async () => {
      await c?.close();
    });

    test("a nested model frozen as a whole trains only the layers around it, equal to model.fit; its weights stay", async () => {
      const model = await equalsModelFit(c, () => frozenNested(), six(), base);
      assert.equal(model.trainableWeights.length, 2);
      assert.equal(c.state, "ready");
    });

    test("the same nested model left trainable trains all of it, equal to model.fit", async () => {
      await equalsModelFit(c, () => frozenNested(false), six(), base);
    });

    test("a Sequential built for [4] and called on [7, 4] inside a functional model trains, equal to model.fit", async () => {
      const data = datasets.synthetic({ inputShape: [7, 4], classes: 3, size: 32, seed: 5 });
      await equalsModelFit(c, nestedOnSequences, data, base);
    });
  });
}

describe("masks and sequence lengths in a 2-stage pipeline", () => {
  let c: Cluster;
  before(async () => {
    c = await cluster().workers(2).strategy("pipeline").launch();
  });
  after(async () => {
    await c?.close();
  });

  test("no stage boundary after an Embedding whose mask the LSTM needs: the plan says so, placing one is refused, and the fit equals model.fit", async () => {
    const { x, y } = paddedIds();
    const data = datasets.fromTensors(x, y, "padded ids");
    const plan = c.plan(maskedLstm(), { batchSize: 8 });
    assert.match(plan.explain(), /not after "embedding\w*", whose output carries a mask/);
    assert.throws(
      () => plan.place([0, 1], 0),
      (e: unknown) => e instanceof ConfigError && /carries the mask "embedding\w*" makes/.test(e.message),
    );
    await equalsModelFit(c, maskedLstm, data, { ...base, optimizer: sgd(0.5) });
  });

  test("an LSTM over sequences of any length (inputShape [null, 3]) trains on the dataset's length, equal to model.fit; the plan prices 5 steps", async () => {
    const data = datasets.fromTensors(tf.randomUniform([32, 5, 3], -1, 1, "float32", 1), tf.randomUniform([32, 5, 2], -1, 1, "float32", 2), "sequences");
    const run = await c.fit(anyLengthLstm(), data, { ...base, loss: "meanSquaredError" });
    assert.ok(run.plan.model.layers[0]!.outputShape[1] === 5, `the plan's LSTM output is [${run.plan.model.layers[0]!.outputShape.join(", ")}]`);
    await equalsModelFit(c, anyLengthLstm, data, { ...base, loss: "meanSquaredError" });
  });
});

test("a GAN's loop: the discriminator's own fit, then the generator's through the frozen discriminator, twice, equal to model.fit's", async () => {
  const c = await cluster().workers(2).strategy("data").launch();
  try {
    const ours = gan();
    const ref = gan();
    const real = tf.randomNormal([16, 2], 2, 0.5, "float32", 7);
    const o = { epochs: 1, batchSize: 8, seed: 3, loss: "binaryCrossentropy" as const, optimizer: sgd(0.05) };
    for (let round = 0; round < 2; round++) {
      const noise = tf.randomNormal([16, 3], 0, 1, "float32", 20 + round);
      const labels = tf.concat([tf.ones([16, 1]), tf.zeros([16, 1])]);
      for (const [g, fit] of [
        [ours, (m: tf.LayersModel, d: Dataset) => c.fit(m, d, o)],
        [ref, (m: tf.LayersModel, d: Dataset) => modelFitReference(m, d, o)],
      ] as const) {
        g.discriminator.trainable = true;
        const samples = tf.concat([real, g.generator.predict(noise) as tf.Tensor]);
        await fit(g.discriminator, datasets.fromTensors(samples, labels, "real and generated"));
        g.discriminator.trainable = false;
        await fit(g.combined, datasets.fromTensors(noise, tf.ones([16, 1]), "noise, labelled real"));
      }
    }
    assert.ok(maxRelativeDifference(ours.generator, ref.generator) < TOLERANCE, `generator ${maxRelativeDifference(ours.generator, ref.generator)}`);
    assert.ok(maxRelativeDifference(ours.discriminator, ref.discriminator) < TOLERANCE, `discriminator ${maxRelativeDifference(ours.discriminator, ref.discriminator)}`);
  } finally {
    await c.close();
  }
});
