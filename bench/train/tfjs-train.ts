import * as tf from "@tensorflow/tfjs";
import { buildDemoModel, type DemoModel } from "../../sdk/cli/models";
import { selectBackend } from "../../sdk/backends/select-backend";
import type { BackendChoice } from "../../sdk/protocol/backend-names";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import { DataReplica } from "../../sdk/roles/data/replica";

/**
 * meshtrain's side of the training-throughput benchmark: one process, one backend, the worker's
 * own replica code (forward, backward, update), the same model, batch and data shapes as
 * bench/peers/torch_train.py. Prints one JSON line.
 *
 * usage: node tfjs-train.js <model | sentiment> <backend> <batch> <steps> <warmup> [optimizer]
 */
/** tfjs-examples' sentiment model as its author wrote it, at its defaults: 10,000 words embedded in 128, an LSTM of 32, one sigmoid unit. */
function sentiment(): tf.LayersModel {
  return tf.sequential({
    layers: [tf.layers.embedding({ inputDim: 10000, outputDim: 128, inputLength: 100 }), tf.layers.lstm({ units: 32 }), tf.layers.dense({ units: 1, activation: "sigmoid" })],
  });
}

async function main(): Promise<void> {
  const [model, backend, batchArg, stepsArg, warmupArg, opt] = process.argv.slice(2) as [DemoModel | "sentiment", BackendChoice, string, string, string, string?];
  const batch = Number(batchArg);
  const steps = Number(stepsArg);
  const warmup = Number(warmupArg);
  tf.enableProdMode();
  const report = await selectBackend(backend, 1);
  const m = model === "sentiment" ? sentiment() : buildDemoModel(model);
  const topology = m.toJSON(null, false) as unknown as Record<string, unknown>;
  const weights = m.getWeights().map((w) => ({ data: Float32Array.from(w.dataSync()), shape: [...w.shape] }));
  m.dispose();
  const optimizer = opt === "adam" ? { name: "adam" as const, learningRate: 0.001, beta1: 0.9, beta2: 0.999 } : { name: "sgd" as const, learningRate: 0.01 };
  const text = model === "sentiment";
  const replica = await DataReplica.load({ type: "load", v: PROTOCOL_VERSION, id: 1, role: "replica", topology, optimizer, loss: text ? "binaryCrossentropy" : "categoricalCrossentropy", replicaBatch: batch, stepTimeoutMs: 60_000, attachments: [] }, weights);
  // Reviews of 100 word ids with a 0/1 label each; digits of 28 x 28 with one of 10 classes.
  const x = text ? { data: Float32Array.from({ length: batch * 100 }, () => Math.floor(Math.random() * 10000)), shape: [batch, 100] } : { data: Float32Array.from({ length: batch * 784 }, () => Math.random()), shape: [batch, 28, 28, 1] };
  const y = text ? { data: Float32Array.from({ length: batch }, (_, i) => i % 2), shape: [batch, 1] } : { data: new Float32Array(batch * 10), shape: [batch, 10] };
  if (!text) for (let i = 0; i < batch; i++) y.data[i * 10 + (i % 10)] = 1;
  const alone = async (data: Float32Array) => ({ data, stats: { waitMs: 0, commMs: 0, bytesSent: 0 } });
  let start = 0;
  const transfers: number[] = [];
  for (let i = 0; i < warmup + steps; i++) {
    if (i === warmup) start = performance.now();
    const r = await replica.train(1, x, y, alone);
    if (i >= warmup) transfers.push((r.readbackMs ?? 0) + (r.uploadMs ?? 0));
  }
  const seconds = (performance.now() - start) / 1000;
  const transferMs = transfers.sort((a, b) => a - b)[Math.floor(transfers.length / 2)] ?? 0;
  process.stdout.write(`${JSON.stringify({ peer: "meshtrain", backend: report.backend, device: report.device, model, batch, steps, optimizer: optimizer.name, samples_per_second: (steps * batch) / seconds, transfer_ms: transferMs })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
