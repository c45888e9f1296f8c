import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, type Cluster } from "../../sdk/index";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import { weightsMoved } from "../helpers/models";
import { slicedReference } from "../helpers/sliced-reference";
import { tinyZoo } from "../helpers/zoo-tiny";

/**
 * The models people train (the zoo's architectures at test sizes: BatchNormalization ResNet,
 * MultiHeadAttention encoder and causal decoder, LSTM and GRU, embeddings, an L2 MLP) under data
 * parallelism, ZeRO-3, a pipeline and synchronous parameter servers, over real worker processes,
 * each equal within 1e-4 to one process training the same slices (model.fit where no state is
 * averaged). Data parallelism, ZeRO-3 and the servers' workers compute by the native step.
 */

tf.enableProdMode();
const TOLERANCE = 1e-4;
// Momentum, not Adam: attention's key bias has a gradient of zero but for rounding (the softmax
// does not see it), which Adam's normalisation turns into steps of the learning rate's size.
const momentum: OptimizerSpec = { name: "momentum", learningRate: 0.05, momentum: 0.9, useNesterov: false };
const fitOptions = { epochs: 1, batchSize: 8, optimizer: momentum, shuffle: true, seed: 4 };

interface Setup {
  name: string;
  make: () => Promise<Cluster>;
  /** The reference's replicas and micro-batches. */
  replicas: number;
  microBatches?: number;
  native: boolean;
}

const setups: Setup[] = [
  { name: "data parallelism, 2 workers", make: () => cluster().workers(2).strategy("data").launch(), replicas: 2, native: true },
  { name: "ZeRO-3, 2 workers", make: () => cluster().workers(2).strategy("data", { shard: "parameters" }).launch(), replicas: 2, native: true },
  { name: "sync parameter servers, 2 workers and 1 server", make: () => cluster().workers(2).ps(1).strategy("ps", { mode: "sync" }).launch(), replicas: 2, native: true },
  { name: "a 2-stage pipeline of 2 micro-batches", make: () => cluster().workers(2).strategy("pipeline", { stages: 2, microBatches: 2 }).launch(), replicas: 1, microBatches: 2, native: false },
];

/**
 * Every weight within 1e-4 of the reference's, relative to that weight's largest value (or 1): a
 * weight whose gradient is zero but for rounding (attention's key bias, which the softmax does not
 * see) stays near zero in both, where a relative norm of the difference would read 1.
 */
function sameWeights(a: tf.LayersModel, b: tf.LayersModel, what: string): void {
  const wb = b.getWeights();
  a.getWeights().forEach((w, i) => {
    const x = w.dataSync();
    const y = wb[i]!.dataSync();
    const scale = Math.max(1, ...Array.from(y, Math.abs));
    for (let j = 0; j < y.length; j++) assert.ok(Math.abs(x[j]! - y[j]!) <= TOLERANCE * scale, `${what}: ${a.weights[i]!.originalName}[${j}] is ${x[j]}, reference ${y[j]}`);
  });
}

for (const s of setups) {
  describe(`the zoo under ${s.name}`, () => {
    let c: Cluster;
    before(async () => {
      c = await s.make();
    });
    after(async () => {
      await c?.close();
    });
    for (const z of tinyZoo()) {
      test(`${z.name} equals one process training the same slices`, async () => {
        const distributed = z.make();
        const single = z.make();
        const start = distributed.getWeights().map((w) => w.clone());
        const run = await c.fit(distributed, z.data, { ...fitOptions, loss: z.loss });
        if (s.native) assert.equal(run.replicaStep?.native, true, `${z.name}: the native step, not autodiff: ${run.replicaStep?.why ?? ""}`);
        const losses = slicedReference(single, z.data, { ...fitOptions, loss: z.loss, replicas: s.replicas, withPenalties: true, ...(s.microBatches ? { microBatches: s.microBatches } : {}) });
        assert.ok(weightsMoved(start, distributed), "training changed the weights");
        sameWeights(distributed, single, z.name);
        run.history.forEach((h, i) => assert.ok(Math.abs(h.loss - losses[i]!) <= TOLERANCE * Math.max(1, Math.abs(losses[i]!)), `${z.name} step ${i}: loss ${h.loss}, reference ${losses[i]}`));
        tf.dispose([...start]);
        distributed.dispose();
        single.dispose();
      });
    }
  });
}
