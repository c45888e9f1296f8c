import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND } from "../../sdk/backends/native/backend";
import { DataReplica } from "../../sdk/roles/data/replica";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import type { Tensorlike } from "../../sdk/protocol/tensor";
import { createOptimizer } from "../../sdk/model/optimizers";
import { inProcessRing, ringLinks } from "../helpers/in-process-ring";
import { assertClose, nativeAvailable, randomArray } from "../helpers/backends";

/**
 * ZeRO-2 and -3 with the optimizers meshtrain runs as TF.js's own (Adagrad, Adadelta, Adamax):
 * each replica keeps their state for its part only, updating a copy of that part (ZeRO-2) or
 * its shard (ZeRO-3). Two replicas over an in-process ring, each on half of every batch, must
 * end where model.fit ends on the whole batches. The integration tests run ZeRO over real links
 * with Adam, momentum and RMSprop, which update in place; these optimizers take another path.
 */

tf.enableProdMode();
nativeAvailable();

function model(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.dense({ inputShape: [6], units: 7, activation: "tanh", kernelInitializer: tf.initializers.glorotUniform({ seed: 1 }) }),
      tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 2 }) }),
    ],
  });
}

const STEPS = 4;
const BATCH = 8;
const xs = randomArray(STEPS * BATCH * 6, 5);
const ys = Float32Array.from({ length: STEPS * BATCH * 3 }, (_, i) => (i % 3 === (Math.floor(i / 3) * 7) % 3 ? 1 : 0));
const rows = (a: Float32Array, width: number, from: number, to: number): Tensorlike => ({ data: a.slice(from * width, to * width), shape: [to - from, width] });

const OPTIMIZERS: OptimizerSpec[] = [
  { name: "adagrad", learningRate: 0.1, initialAccumulatorValue: 0.1 },
  { name: "adadelta", learningRate: 1, rho: 0.95 },
  { name: "adamax", learningRate: 0.02, beta1: 0.9, beta2: 0.999, decay: 0 },
];

for (const optimizer of OPTIMIZERS) {
  for (const shard of ["gradients", "parameters"] as const) {
    test(`ZeRO-${shard === "gradients" ? 2 : 3} with ${optimizer.name} on 2 replicas equals model.fit`, async () => {
      tf.setBackend("cpu");
      const reference = model();
      reference.compile({ optimizer: createOptimizer(optimizer), loss: "categoricalCrossentropy" });
      await reference.fit(tf.tensor2d(xs, [STEPS * BATCH, 6]), tf.tensor2d(ys, [STEPS * BATCH, 3]), { batchSize: BATCH, epochs: 1, shuffle: false, verbose: 0 });
      const want = reference.getWeights().map((w) => w.dataSync() as Float32Array);
      tf.setBackend(NATIVE_BACKEND);
      try {
        const initial: Tensorlike[] = model().getWeights().map((w) => ({ data: w.dataSync() as Float32Array, shape: [...w.shape] }));
        const topology = model().toJSON(null, false) as unknown as Record<string, unknown>;
        const { rings } = inProcessRing(2, 64);
        const io = rings.map((r, p) => ringLinks(r, p, 2));
        const load = { type: "load" as const, v: PROTOCOL_VERSION as typeof PROTOCOL_VERSION, id: 1, role: "replica" as const, topology, optimizer, loss: "categoricalCrossentropy" as const, replicaBatch: BATCH / 2, stepTimeoutMs: 60_000, attachments: [], sum: { kind: shard === "gradients" ? ("zero-2" as const) : ("zero-3" as const), over: 2 } };
        const replicas = await Promise.all(io.map((links) => DataReplica.load(load, initial, { io: () => links })));
        for (let step = 0; step < STEPS; step++) {
          await Promise.all(
            replicas.map((r, p) => {
              const [from, to] = [step * BATCH + (p * BATCH) / 2, step * BATCH + ((p + 1) * BATCH) / 2];
              return r.step({ type: "step", v: PROTOCOL_VERSION, id: 2 + step, step, epoch: 0, weight: 0.5, generation: 1, attachments: [] }, [rows(xs, 6, from, to), rows(ys, 3, from, to)], io[p]!);
            }),
          );
        }
        const got = await Promise.all(replicas.map((r) => r.weights()));
        for (const [p, w] of got.entries()) w.tensors.forEach((t, i) => assertClose(t.data, want[i]!, 1e-5, `replica ${p}, weight ${i}`));
        replicas.forEach((r) => r.dispose());
      } finally {
        tf.setBackend("cpu");
      }
    });
  }
}
