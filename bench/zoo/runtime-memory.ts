import * as tf from "@tensorflow/tfjs";
import { selectBackend } from "../../sdk/backends/select-backend";
import { DataReplica } from "../../sdk/roles/data/replica";
import { resetKernelPeak, statusBytes } from "../../sdk/worker/memory-watch";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import type { LoadOf } from "../../sdk/protocol/load-messages";
import { nativeStepOptions } from "../../sdk/backends/native/step/compile";
import { estimateReplicaMemory, memoryTotal } from "../../sdk/plan/memory";
import { summarizeModel } from "../../sdk/plan/model-summary";

/**
 * What a process holds above itself for a model of almost no weights, measured as bench:zoo's
 * tfjs-zoo.ts measures a zoo model (the kernel's high-water mark over 20 steps, above the process
 * before the model arrived): the runtime's own cost of building and stepping any model (compiled
 * code, the replica's objects, the young generation), which the plan's estimate does not count.
 * Prints one JSON line.
 *
 * usage: node --expose-gc dist/bench/zoo/runtime-memory.js [units] [inputs] [batch]
 */
async function main(): Promise<void> {
  const [units, inputs, batch] = [2, 3, 4].map((i, k) => Number(process.argv[i] ?? [1, 4, 8][k]));
  tf.enableProdMode();
  await selectBackend("native", 1);
  const warm = tf.matMul(tf.ones([256, 256]), tf.ones([256, 256]));
  await warm.data();
  warm.dispose();
  const rssBefore = process.memoryUsage().rss;
  const m = tf.sequential({
    layers: [tf.layers.dense({ units, inputShape: [inputs], activation: "relu" }), tf.layers.dense({ units: 2, activation: "softmax" })],
  });
  const optimizer = { name: "sgd" as const, learningRate: 0.01 };
  const estimate = memoryTotal(estimateReplicaMemory(summarizeModel(m), { batchSize: batch, optimizer, native: nativeStepOptions(m).nativeMemory }));
  const topology = m.toJSON(null, false) as unknown as Record<string, unknown>;
  const weights = m.getWeights().map((w) => ({ data: Float32Array.from(w.dataSync()), shape: [...w.shape] }));
  m.dispose();
  const load: LoadOf<"replica"> = { type: "load", v: PROTOCOL_VERSION, id: 1, role: "replica", topology, optimizer, loss: "categoricalCrossentropy", replicaBatch: batch, stepTimeoutMs: 60_000, attachments: [] };
  const replica = await DataReplica.load(load, weights);
  (globalThis as { gc?: () => void }).gc?.();
  const x = { data: new Float32Array(batch * inputs).fill(0.5), shape: [batch, inputs] };
  const y = { data: Float32Array.from({ length: batch * 2 }, (_, i) => i % 2), shape: [batch, 2] };
  const alone = async (data: Float32Array) => ({ data, stats: { waitMs: 0, commMs: 0, bytesSent: 0 } });
  const kernel = resetKernelPeak();
  let peak = process.memoryUsage().rss;
  for (let i = 0; i < 20; i++) {
    await replica.train(1, x, y, alone);
    peak = Math.max(peak, (kernel ? statusBytes("VmHWM") : null) ?? process.memoryUsage().rss);
  }
  process.stdout.write(`${JSON.stringify({ units, inputs, batch, peakAboveMiB: (peak - rssBefore) / 2 ** 20, estimateMiB: estimate / 2 ** 20 })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
