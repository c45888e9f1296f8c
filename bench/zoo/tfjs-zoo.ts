import * as tf from "@tensorflow/tfjs";
import { selectBackend } from "../../sdk/backends/select-backend";
import type { BackendChoice } from "../../sdk/protocol/backend-names";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import type { LoadOf } from "../../sdk/protocol/load-messages";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import type { Tensorlike } from "../../sdk/protocol/tensor";
import { DataReplica } from "../../sdk/roles/data/replica";
import { MemoryWatch } from "../../sdk/worker/memory-watch";
import { ownBytes } from "../../sdk/metrics/memory-lines";
import { replicaStepReport } from "../../sdk/compute/loaded-replica";
import { nativeStepOptions } from "../../sdk/backends/native/step/compile";
import { estimateReplicaMemory, memoryTotal } from "../../sdk/plan/memory";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { RUNTIME_PROBE, ZOO_MODELS, type ZooEntry, type ZooModel } from "./models";

/**
 * meshtrain's side of bench:zoo: one process, one backend, the worker's own replica (forward,
 * backward, update), one zoo model at a batch, SGD or Adam. Prints one JSON line: samples/s,
 * whether the native step ran (or which layer kept autodiff), the kernels TF.js dispatched in a
 * step, and the worker's peak memory above what the process held before the model was built.
 *
 * usage: node tfjs-zoo.js <model> <backend> <batch> <steps> <warmup> [sgd|adam]
 * (<model> "runtime": RUNTIME_PROBE in models.ts, the runtime's own memory)
 */

/** A batch of the model's inputs and targets, fixed seeds (what is measured is the time, not the learning). */
export function zooBatch(e: ZooEntry, batch: number): { x: Tensorlike; y: Tensorlike } {
  let s = 12345;
  const rand = (): number => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
  const n = batch * e.input.reduce((a, b) => a * b, 1);
  const x = { data: Float32Array.from({ length: n }, () => (e.vocab ? 1 + Math.floor(rand() * (e.vocab - 1)) : rand())), shape: [batch, ...e.input] };
  const t = e.target;
  if (t.kind === "class") {
    const rows = t.perPosition ? batch * e.input[0]! : batch;
    if (e.loss === "categoricalCrossentropy") {
      const y = new Float32Array(rows * t.classes);
      for (let r = 0; r < rows; r++) y[r * t.classes + Math.floor(rand() * t.classes)] = 1;
      return { x, y: { data: y, shape: [batch, ...(t.perPosition ? [e.input[0]!] : []), t.classes] } };
    }
    return { x, y: { data: Float32Array.from({ length: rows }, () => Math.floor(rand() * t.classes)), shape: t.perPosition ? [batch, e.input[0]!, 1] : [batch, 1] } };
  }
  return { x, y: { data: Float32Array.from({ length: batch }, () => (t.kind === "binary" ? Math.round(rand()) : rand())), shape: [batch, 1] } };
}

/** The driver's part: the load message a worker receives, and the plan's estimate of that worker's memory. */
function loadMessage(entry: ZooEntry, batch: number, optimizer: OptimizerSpec, native: boolean): { load: LoadOf<"replica">; weights: Tensorlike[]; params: number; estimate: number } {
  const m = entry.build(1);
  const topology = m.toJSON(null, false) as unknown as Record<string, unknown>;
  const weights = m.getWeights().map((w) => ({ data: Float32Array.from(w.dataSync()), shape: [...w.shape] }));
  // As the driver makes it: the native step's arrays where the model trains by it.
  const estimate = memoryTotal(estimateReplicaMemory(summarizeModel(m), { batchSize: batch, optimizer, native: native ? nativeStepOptions(m).nativeMemory : null }));
  const params = m.countParams();
  m.dispose();
  const load: LoadOf<"replica"> = { type: "load", v: PROTOCOL_VERSION, id: 1, role: "replica", topology, optimizer, loss: entry.loss, replicaBatch: batch, stepTimeoutMs: 600_000, attachments: [] };
  return { load, weights, params, estimate };
}

async function main(): Promise<void> {
  const [name, backend, batchArg, stepsArg, warmupArg, opt] = process.argv.slice(2) as [ZooModel, BackendChoice, string, string, string, string?];
  const batch = Number(batchArg);
  const steps = Number(stepsArg);
  const warmup = Number(warmupArg);
  tf.enableProdMode();
  const report = await selectBackend(backend, 1);
  const entry = (name as string) === "runtime" ? RUNTIME_PROBE : ZOO_MODELS[name];
  if (!entry) throw new Error(`unknown zoo model ${name}`);
  // The process's own memory, as a worker's is read before a model arrives: its backend warmed up
  // (BLAS's buffers, the first kernels' JavaScript), so what is measured above it is the model's.
  const warm = tf.matMul(tf.ones([256, 256]), tf.ones([256, 256]));
  await warm.data();
  warm.dispose();
  const optimizer = opt === "adam" ? { name: "adam" as const, learningRate: 0.001, beta1: 0.9, beta2: 0.999 } : { name: "sgd" as const, learningRate: 0.01 };
  const { load, weights, params, estimate } = loadMessage(entry, batch, optimizer, report.backend === "native");
  // Measured as a worker measures a fit (MemoryWatch): the process settled with the load message
  // arrived (its weights not counted as the process's own), the peak from the loaded model
  // through the last step, and the fit's growth taken above ownBytes (the idle process with V8's
  // young generation as the fit had it), so what is set beside the plan's estimate is the same
  // figure the fit's memory lines show. The driver's model built for the message is garbage by then.
  const watch = new MemoryWatch(() => Promise.resolve());
  await watch.start(weights.reduce((bytes, w) => bytes + w.data.byteLength, 0));
  const replica = await DataReplica.load(load, weights.splice(0));
  await watch.loaded();
  const { x, y } = zooBatch(entry, batch);
  const alone = async (data: Float32Array) => ({ data, stats: { waitMs: 0, commMs: 0, bytesSent: 0 } });
  let start = 0;
  for (let i = 0; i < warmup + steps; i++) {
    if (i === warmup) start = performance.now();
    await replica.train(1, x, y, alone);
    watch.stepDone();
  }
  const memory = watch.report();
  const seconds = (performance.now() - start) / 1000;
  // Kernels TF.js dispatches in one step (the native step dispatches none).
  const profile = await tf.profile(async () => {
    await replica.train(1, x, y, alone);
  });
  const loaded = (replica as unknown as { r: Parameters<typeof replicaStepReport>[0] }).r;
  const step = replicaStepReport(loaded);
  if (process.env.ZOO_OPS && loaded.step.native) {
    loaded.step.native.timeOps(true);
    for (let i = 0; i < 3; i++) await replica.train(1, x, y, alone);
    const ops = loaded.step.native.timeOps(false);
    const total = ops.reduce((a, o) => a + o.forwardMs + o.backwardMs, 0);
    for (const o of ops.slice(0, Number(process.env.ZOO_OPS))) process.stderr.write(`${((100 * (o.forwardMs + o.backwardMs)) / total).toFixed(1)}% ${o.layer}: forward ${(o.forwardMs / 3).toFixed(2)} ms, backward ${(o.backwardMs / 3).toFixed(2)} ms\n`);
    process.stderr.write(`ops total ${(total / 3).toFixed(1)} ms a step\n`);
  }
  process.stdout.write(
    `${JSON.stringify({
      peer: "meshtrain", backend: report.backend, device: report.device, model: name, batch, steps, optimizer: optimizer.name, params,
      samples_per_second: (steps * batch) / seconds, native: step.native, why: step.native ? null : step.why,
      kernels_per_step: profile.kernels.length, peak_rss_above_mib: (memory.peakRssBytes - ownBytes(memory)) / 2 ** 20, estimate_mib: estimate / 2 ** 20,
    })}\n`,
  );
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
