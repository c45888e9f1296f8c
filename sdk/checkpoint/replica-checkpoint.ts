import type * as tf from "@tensorflow/tfjs";
import type { WorkerHandle } from "../cluster/worker-handle";
import type { Dataset } from "../data/dataset";
import { CheckpointError } from "../errors/errors";
import type { ModelSummary } from "../plan/model-summary";
import type { ResolvedFitOptions } from "../spec/fit-options";
import { awaitAll, setModelWeights, type FitContext } from "../strategies/fit-common";
import { readCheckpoint, writeCheckpoint, type Checkpoint } from "./store";

/** What a model is made of, for telling whether a checkpoint belongs to it (names differ between builds). */
export function modelKey(m: ModelSummary): string {
  return JSON.stringify(m.layers.map((l) => [l.className, l.params, l.outputShape]));
}

/**
 * Reads the checkpoint a fit resumes from and checks it belongs to this model, dataset and
 * options; the model takes its weights. Returns it, and the options to run with (its seed and
 * shuffle, which fix the order of the samples).
 */
export function resumeFrom(from: string, model: tf.LayersModel, summary: ModelSummary, dataset: Dataset, o: ResolvedFitOptions): { ckpt: Checkpoint; options: ResolvedFitOptions } {
  const ckpt = readCheckpoint(from);
  const b = ckpt.body;
  const mismatch = (what: string, was: unknown, now: unknown): CheckpointError =>
    new CheckpointError(`the checkpoint ${ckpt.path} was made with ${what} ${JSON.stringify(was)}; this fit has ${JSON.stringify(now)}`, {
      details: { file: ckpt.path },
      hint: "resume with the model, dataset and options the checkpoint was made with",
    });
  if (b.modelKey !== modelKey(summary)) throw new CheckpointError(`the checkpoint ${ckpt.path} was made for another model (other layers or shapes) than "${summary.name}"`, { details: { file: ckpt.path } });
  if (b.datasetSize !== dataset.size) throw mismatch("a dataset of", b.datasetSize, dataset.size);
  if (b.batchSize !== o.batchSize) throw mismatch("batchSize", b.batchSize, o.batchSize);
  if (b.loss !== o.loss) throw mismatch("loss", b.loss, o.loss);
  if (JSON.stringify(b.optimizer) !== JSON.stringify(o.optimizer)) throw mismatch("optimizer", b.optimizer, o.optimizer);
  setModelWeights(model, ckpt.weights.map((data, i) => ({ data, shape: b.weights[i]!.shape })));
  return { ckpt, options: { ...o, seed: b.seed, shuffle: b.shuffle } };
}

/** Gives every replica the optimizer state of the checkpoint. */
export async function restoreOptimizer(ctx: FitContext, replicas: readonly WorkerHandle[], ckpt: Checkpoint): Promise<void> {
  const s = ckpt.body.optimizerState;
  const attachments = ckpt.optimizer.map((data, i) => ({ data, shape: s.tensors[i]!.shape }));
  await awaitAll(ctx)(
    replicas.map((w) =>
      w.channel.request({ type: "setState", format: s.format, names: s.tensors.map((t) => t.name), scalars: s.scalars }, "stateSet", {
        timeoutMs: ctx.spec.timeouts.stepMs,
        waitingFor: "the checkpoint's optimizer state to load",
        attachments,
      }),
    ),
  );
}

/** Saves what replica `from` holds after `stepsDone` steps (every replica holds the same). */
export function replicaSaver(ctx: FitContext, from: WorkerHandle, dir: string, summary: ModelSummary, dataset: Dataset, o: ResolvedFitOptions): (stepsDone: number) => Promise<void> {
  return async (stepsDone) => {
    const waiting = { timeoutMs: ctx.spec.timeouts.stepMs };
    const all = awaitAll(ctx);
    const [weights] = await all([from.channel.request({ type: "fetchWeights" }, "weights", { ...waiting, waitingFor: "the weights to checkpoint" })]);
    const [state] = await all([from.channel.request({ type: "fetchState" }, "state", { ...waiting, waitingFor: "the optimizer state to checkpoint" })]);
    if (!weights || !state) throw new CheckpointError("the worker sent no state to checkpoint");
    writeCheckpoint(
      dir,
      {
        strategy: "data",
        step: stepsDone,
        seed: o.seed,
        shuffle: o.shuffle,
        batchSize: o.batchSize,
        datasetSize: dataset.size,
        datasetName: dataset.name,
        loss: o.loss,
        optimizer: { ...o.optimizer },
        modelKey: modelKey(summary),
        weights: weights.attachments.map((t, i) => ({ name: `weight ${i}`, shape: [...t.shape] })),
        optimizerState: { format: state.msg.format, scalars: state.msg.scalars, tensors: state.msg.names.map((name, i) => ({ name, shape: [...state.attachments[i]!.shape] })) },
      },
      weights.attachments.map((t) => t.data as Float32Array),
      state.attachments.map((t) => t.data as Float32Array),
    );
  };
}

