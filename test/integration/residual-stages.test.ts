import assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, type Dataset } from "../../sdk/index";
import type { PipelinePlan } from "../../sdk/plan/plans";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { maxRelativeDifference, weightsMoved } from "../helpers/models";
import { slicedReference } from "../helpers/sliced-reference";
import { residualCnn, transformerStack } from "../helpers/residual-models";

/**
 * Residual networks split into stages on real worker processes: a ResNet-style CNN (residual
 * blocks with BatchNormalization, a strided block with a projection shortcut) and a pre-norm
 * transformer stack (a custom attention layer the workers load with .modules, residuals,
 * LayerNormalization), under 2- and 3-stage pipelines and a 2 x 2 hybrid, each equal to the
 * one-process reference of the same micro-batches. Every stage starts and ends where one tensor
 * crosses, so no block is cut.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;
const ATTENTION = path.join(__dirname, "..", "helpers", "attention-layer.js");
const o = { epochs: 1, batchSize: 8, optimizer: { name: "adam" as const, learningRate: 0.01, beta1: 0.9, beta2: 0.999 }, loss: "categoricalCrossentropy" as const, shuffle: true, seed: 4 };

const models: Array<{ build: () => tf.LayersModel; data: Dataset }> = [
  { build: residualCnn, data: datasets.synthetic({ inputShape: [8, 8, 1], classes: 3, size: 24, seed: 3 }) },
  { build: transformerStack, data: datasets.synthetic({ inputShape: [4, 8], classes: 3, size: 24, seed: 5 }) },
];

const shapes: Array<{ strategy: "pipeline" | "hybrid"; workers: number; options: { stages: number; microBatches: number; replicas?: number } }> = [
  { strategy: "pipeline", workers: 2, options: { stages: 2, microBatches: 2 } },
  { strategy: "pipeline", workers: 3, options: { stages: 3, microBatches: 2 } },
  { strategy: "hybrid", workers: 4, options: { stages: 2, replicas: 2, microBatches: 2 } },
];

for (const shape of shapes) {
  test(`a ResNet-style CNN and a transformer stack under ${shape.strategy} (${shape.options.stages} stages on ${shape.workers} workers) equal the one-process reference`, async () => {
    // The reference trains synchronously in this process between fits: on a swamped machine
    // over 10 s, and idle workers took their silent driver for gone.
    const c = await cluster().workers(shape.workers).strategy(shape.strategy, shape.options).backend("cpu").modules([ATTENTION]).heartbeat({ timeoutMs: 120_000 }).launch();
    try {
      for (const { build, data } of models) {
        const model = build();
        const start = model.getWeights().map((w) => w.clone());
        const run = await c.fit(model, data, o);
        const plan = run.plan as PipelinePlan;
        const cuts = summarizeModel(model).cuts;
        for (const st of plan.stagePlans) assert.ok(cuts[st.from]!.ok && cuts[st.to]!.ok, `${model.name}: stage ${st.stage} [${st.from}, ${st.to}) begins and ends at a cut point`);
        assert.ok(weightsMoved(start, model), `${model.name}: the user's model holds the trained weights`);
        const reference = build();
        slicedReference(reference, data, { ...o, replicas: shape.options.replicas ?? 1, microBatches: shape.options.microBatches });
        const diff = maxRelativeDifference(model, reference);
        assert.ok(diff < TOLERANCE, `${model.name}: relative difference ${diff} >= ${TOLERANCE}`);
        assert.ok(Number.isFinite(run.history.at(-1)!.loss));
      }
    } finally {
      await c.close();
    }
  });
}
