import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets } from "../../sdk/index";
import { ModelError } from "../../sdk/errors/errors";
import type { PipelinePlan } from "../../sdk/plan/plans";
import { maxRelativeDifference, weightsMoved } from "../helpers/models";
import { slicedReference } from "../helpers/sliced-reference";
import { functionalChain, residualClassifier } from "../helpers/stateful-models";

/**
 * Functional models (tf.model), on real worker processes: a chain of layers is split into
 * stages as its Sequential twin is, and the user's own model object gets the trained weights;
 * a model with a branch and a merge trains whole under data parallelism and split at its one cut
 * point under a pipeline; a model the stages cannot split (a shared layer) is refused before
 * anything is sent.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 27, seed: 11 });
const o = { epochs: 2, batchSize: 8, optimizer: { name: "adam" as const, learningRate: 0.02, beta1: 0.9, beta2: 0.999 }, loss: "categoricalCrossentropy" as const, shuffle: true, seed: 2 };

test("a functional chain and a residual model under a 2-stage pipeline equal the reference of the same micro-batches; a shared layer is refused", async () => {
  const c = await cluster().workers(2).strategy("pipeline", { stages: 2, microBatches: 2 }).backend("cpu").launch();
  try {
    const model = functionalChain();
    const start = model.getWeights().map((w) => w.clone());
    const run = await c.fit(model, ds, o);
    assert.equal(run.plan.strategy, "pipeline");
    assert.equal(run.plan.model.layers.length, 7, "the InputLayer is not a layer to place");
    assert.ok(weightsMoved(start, model), "the user's functional model holds the trained weights");
    const reference = functionalChain();
    slicedReference(reference, ds, { ...o, replicas: 1, microBatches: 2 });
    const diff = maxRelativeDifference(model, reference);
    assert.ok(diff < TOLERANCE, `relative difference ${diff} >= ${TOLERANCE}`);
    assert.ok(model.nonTrainableWeights[0]!.read().dataSync().some((v) => v !== 0), "the moving mean came back too");

    const branching = residualClassifier();
    const split = await c.fit(branching, ds, o);
    // The skip is the model input: the driver hands it to both stages, so any point is a cut.
    assert.deepEqual((split.plan as PipelinePlan).stagePlans.map((st) => st.feeds), [[0], [0]]);
    const branchingReference = residualClassifier();
    slicedReference(branchingReference, ds, { ...o, replicas: 1, microBatches: 2 });
    const branchDiff = maxRelativeDifference(branching, branchingReference);
    assert.ok(branchDiff < TOLERANCE, `residual: relative difference ${branchDiff} >= ${TOLERANCE}`);
    const shared = tf.layers.dense({ units: 6, name: "twice" });
    const a = tf.input({ shape: [6] });
    const twice = tf.model({ inputs: a, outputs: shared.apply(shared.apply(a)) as tf.SymbolicTensor });
    assert.throws(() => c.plan(twice), (e: unknown) => e instanceof ModelError && /shared layer/.test(e.message));
    assert.equal(c.state, "ready");
    await c.fit(functionalChain(), ds, { ...o, epochs: 1 });
  } finally {
    await c.close();
  }
});

test("a functional model with a branch and a merge trains under data parallelism as the one-process reference", async () => {
  const c = await cluster().workers(2).strategy("data").backend("cpu").launch();
  try {
    const model = residualClassifier();
    await c.fit(model, ds, o);
    const reference = residualClassifier();
    slicedReference(reference, ds, { ...o, replicas: 2 });
    const diff = maxRelativeDifference(model, reference);
    assert.ok(diff < TOLERANCE, `relative difference ${diff} >= ${TOLERANCE}`);
  } finally {
    await c.close();
  }
});
