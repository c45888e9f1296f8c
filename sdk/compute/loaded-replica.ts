import * as tf from "@tensorflow/tfjs";
import { NativeBackend } from "../backends/native/backend";
import { NativeStep, type StepChoice, type StepObjective } from "../backends/native/step/native-step";
import { ModelError } from "../errors/errors";
import { buildModel } from "../model/model-io";
import { createOptimizer } from "../model/optimizers";
import { untrainedWeights, zeroInitialized } from "../model/shard-load";
import { estimateParts, estimateReplicaMemory, formatBytes, memoryTotal, shardedMemory } from "../plan/memory";
import { summarizeModel } from "../plan/model-summary";
import { largestBucketBytes } from "../plan/shard-buckets";
import { shardedStateOf } from "../protocol/gradient-sum-spec";
import type { LoadOf } from "../protocol/messages";
import type { ReplicaStepChoice } from "../protocol/profile-messages";
import type { SlowStep } from "../protocol/slow-step";
import type { Tensorlike } from "../protocol/tensor";
import { ModelState } from "./model-state";
import { objectiveOf, type Objective } from "./objective";
import { StepInsight } from "./step-insight";

/** A whole model on one worker, as data parallelism and parameter servers use it. */
export interface LoadedReplica {
  model: tf.LayersModel;
  /** model.compile wants an optimizer; updates themselves are made elsewhere. */
  compileOptimizer: tf.Optimizer;
  /** What training minimises and reports, per output (validation takes the plain losses: model.fit does not weight validation). */
  objective: Objective;
  vars: tf.Variable[];
  /** The variables' names (for a report of a non-finite gradient) and sizes. */
  names: string[];
  sizes: number[];
  gradientLength: number;
  /** Non-trainable state (BatchNormalization's moving statistics), which replicas average. */
  state: ModelState;
  /** The step compiled to native kernels, or why the model trains by TF.js's autodiff. */
  step: StepChoice;
  /** Whether a step runs well below what its FLOPs predict, and then where its time goes. */
  insight: StepInsight;
}

/** Builds the model and its step, refusing them when this worker's memory cap is below their estimate (the native step's: what its arrays take). */
export async function loadReplica(
  msg: LoadOf<"replica" | "ps-worker">,
  weights: Tensorlike[] | "initial",
  memoryCapBytes: number | null,
): Promise<LoadedReplica> {
  // ZeRO-3 loaded in parts: only the weights not trained came; the rest is built zeroed, costing no memory until its part arrives.
  const parts = "weights" in msg && msg.weights === "parts";
  const model = parts
    ? await buildModel(zeroInitialized(msg.topology), weights, untrainedWeights)
    : await buildModel(msg.topology, weights);
  const compileOptimizer = createOptimizer(msg.optimizer);
  const objective = objectiveOf(model, msg, compileOptimizer);
  const vars = model.trainableWeights.map((w) => w.read() as tf.Variable);
  const sizes = vars.map((v) => v.size);
  const names = model.trainableWeights.map((w) => w.originalName);
  const heads = msg.heads ?? [{ loss: msg.loss, weight: 1 }];
  const step: StepChoice =
    "batchNorm" in msg && msg.batchNorm === "sync"
      ? { native: null, why: 'batchNorm "sync" takes each step in all-reduced rounds, by autodiff' }
      : compileNativeStep(model, { heads, classWeight: msg.classWeight ?? null }, vars);
  if (memoryCapBytes !== null)
    refuseOverCap(msg, model, step, memoryCapBytes, () => (model.dispose(), compileOptimizer.dispose()));
  return {
    model,
    compileOptimizer,
    objective,
    vars,
    names,
    sizes,
    gradientLength: sizes.reduce((a, b) => a + b, 0),
    state: new ModelState(model),
    step,
    insight: new StepInsight(model, step.native),
  };
}

/** Refuses (after `release()`) a replica whose estimate, sharded as the load says, is above this worker's memory cap. */
function refuseOverCap(
  msg: LoadOf<"replica" | "ps-worker">,
  model: tf.LayersModel,
  step: StepChoice,
  memoryCapBytes: number,
  release: () => void,
): void {
  const summary = summarizeModel(model);
  // Sharded, this replica keeps its share of the optimizer's state (ZeRO-1), of the gradient too (ZeRO-2), and of the weights (ZeRO-3).
  const sum = "sum" in msg ? msg.sum : undefined;
  const over = sum && "over" in sum ? sum.over : 1;
  const buckets = sum && "bucketBytes" in sum ? (sum.bucketBytes ?? 0) : 0;
  const native = step.native ? step.native.memory() : null;
  const e = shardedMemory(
    estimateReplicaMemory(summary, { batchSize: msg.replicaBatch, optimizer: msg.optimizer, native }),
    shardedStateOf(sum),
    over,
    largestBucketBytes(summary, buckets),
    msg.optimizer,
    "overlap" in msg && msg.overlap === true,
  );
  const need = memoryTotal(e);
  if (need > memoryCapBytes) {
    release();
    throw new ModelError(
      `the whole model needs ${formatBytes(need)} per replica (${estimateParts(e, msg.replicaBatch, over > 1 ? ` (its share of ${over})` : "")}), above this worker's memory cap of ${formatBytes(memoryCapBytes)}`,
      {
        hint: 'on several workers, shard the training state among them, strategy("data", { shard: "optimizer" | "gradients" | "parameters" }) (ZeRO-1, -2, -3), or split the model over them: strategy("pipeline"), strategy("hybrid", { stages }) or strategy("auto")',
        details: { neededBytes: need, capBytes: memoryCapBytes },
      },
    );
  }
}

/** The replica's report of a slow step, where it has one to send (once a fit), as a step report's field. */
export function slowReport(r: LoadedReplica): { slow?: SlowStep } {
  const slow = r.insight.take();
  return slow ? { slow } : {};
}

/** What the driver is told of how this replica computes its gradient. */
export function replicaStepReport(r: LoadedReplica): ReplicaStepChoice {
  return r.step.native ? { native: true } : { native: false, why: r.step.why };
}

/** The native step where the worker runs the native backend and the model compiles to one. */
function compileNativeStep(model: tf.LayersModel, objective: StepObjective, vars: tf.Variable[]): StepChoice {
  const backend = tf.backend();
  if (!(backend instanceof NativeBackend))
    return { native: null, why: `the ${tf.getBackend()} backend has no native step` };
  if (process.env.MESHTRAIN_NATIVE_STEP === "0") return { native: null, why: "MESHTRAIN_NATIVE_STEP=0 turned it off" };
  return NativeStep.compile(backend, model, objective, vars);
}
