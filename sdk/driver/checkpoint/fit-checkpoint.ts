import type * as tf from "@tensorflow/tfjs";
import type { WorkerHandle } from "../../members/worker-handle";
import type { Dataset } from "../../data/dataset";
import { CheckpointError } from "../../errors/errors";
import type { ModelSummary } from "../../plan/model-summary";
import type { ResolvedFitOptions } from "../fit-options";
import type { Tensorlike } from "../../protocol/tensor";
import { awaitAll } from "../await";
import { type FitContext } from "../fit-context";
import { setModelWeights } from "../model-transfer";
import { readCheckpoint, writeCheckpoint, type Checkpoint, type CheckpointBody } from "./store";
import { FitAborted } from "../fit-stop";
import { shardedParts } from "./sharded";
import type { Cadence } from "./cadence";

/**
 * Checkpoints of a fit, whatever the strategy: the whole model's weights (assembled by the
 * strategy), and the optimizer state of every holder of some of it: "replica" (data
 * parallelism: every replica holds the same), "stage s" (every replica of stage s), "server i";
 * or, sharded (ZeRO), a part per replica (sharded.ts).
 */

/** Who holds a part of the optimizer state: saved from `from`, restored into each of `to`. */
export interface Holder {
  name: string;
  from: WorkerHandle;
  to: readonly WorkerHandle[];
}

/** What a model is made of, for telling whether a checkpoint belongs to it (names differ between builds). */
export function modelKey(m: ModelSummary): string {
  return JSON.stringify(m.layers.map((l) => [l.className, l.params, l.outputShape]));
}

/**
 * Reads the checkpoint a fit resumes from and checks it belongs to this strategy, model,
 * dataset and options; the model takes its weights. Returns it, and the options to run with
 * (its seed and shuffle, which fix the order of the samples).
 */
export function resumeFrom(
  from: string,
  strategy: CheckpointBody["strategy"],
  model: tf.LayersModel,
  summary: ModelSummary,
  dataset: Dataset,
  o: ResolvedFitOptions,
): { ckpt: Checkpoint; options: ResolvedFitOptions } {
  const ckpt = readCheckpoint(from);
  const b = ckpt.body;
  const mismatch = (what: string, was: unknown, now: unknown): CheckpointError =>
    new CheckpointError(
      `the checkpoint ${ckpt.path} was made with ${what} ${JSON.stringify(was)}; this fit has ${JSON.stringify(now)}`,
      {
        details: { file: ckpt.path },
        hint: "resume with the strategy, model, dataset and options the checkpoint was made with",
      },
    );
  if (b.strategy !== strategy) throw mismatch("strategy", b.strategy, strategy);
  if (b.modelKey !== modelKey(summary))
    throw new CheckpointError(
      `the checkpoint ${ckpt.path} was made for another model (other layers or shapes) than "${summary.name}"`,
      { details: { file: ckpt.path } },
    );
  if (b.datasetSize !== dataset.size) throw mismatch("a dataset of", b.datasetSize, dataset.size);
  if (b.batchSize !== o.batchSize) throw mismatch("batchSize", b.batchSize, o.batchSize);
  if (b.loss !== o.loss) throw mismatch("loss", b.loss, o.loss);
  if (JSON.stringify(b.optimizer) !== JSON.stringify(o.optimizer))
    throw mismatch("optimizer", b.optimizer, o.optimizer);
  setModelWeights(
    model,
    ckpt.weights.map((data, i) => ({ data, shape: b.weights[i]!.shape })),
  );
  return { ckpt, options: { ...o, seed: b.seed, shuffle: b.shuffle } };
}

/** Gives every holder its optimizer state from the checkpoint. */
export async function restoreOptimizers(ctx: FitContext, ckpt: Checkpoint, holders: readonly Holder[]): Promise<void> {
  let k = 0;
  const requests: Array<Promise<unknown>> = [];
  for (const s of ckpt.body.optimizerStates) {
    const attachments = s.tensors.map((t) => ({ data: ckpt.optimizer[k++]!, shape: t.shape }));
    const holder = holders.find((h) => h.name === s.holder);
    if (!holder)
      throw new CheckpointError(
        `the checkpoint ${ckpt.path} holds optimizer state for "${s.holder}", which this fit does not have`,
        { details: { file: ckpt.path }, hint: "resume on a cluster of the same shape (workers, stages, servers)" },
      );
    for (const w of holder.to) {
      requests.push(
        w.channel.request(
          { type: "setState", format: s.format, names: s.tensors.map((t) => t.name), scalars: s.scalars },
          "stateSet",
          {
            timeoutMs: ctx.spec.timeouts.stepMs,
            waitingFor: "the checkpoint's optimizer state to load",
            attachments,
          },
        ),
      );
    }
  }
  if (holders.length !== ckpt.body.optimizerStates.length) {
    throw new CheckpointError(
      `the checkpoint ${ckpt.path} has optimizer state for ${ckpt.body.optimizerStates.length} holder(s); this fit has ${holders.length}`,
      { details: { file: ckpt.path }, hint: "resume on a cluster of the same shape (workers, stages, servers)" },
    );
  }
  await awaitAll(ctx)(requests);
}

/**
 * Saves the fit after `stepsDone` steps: the model's weights as `weights` assembles them, and
 * each holder's optimizer state.
 */
export function checkpointSaver(
  ctx: FitContext,
  o: {
    dir: string;
    strategy: CheckpointBody["strategy"];
    summary: ModelSummary;
    dataset: Dataset;
    options: ResolvedFitOptions;
    holders: readonly Holder[];
    weights: () => Promise<Tensorlike[]>;
    sharded?: readonly WorkerHandle[];
  },
): (stepsDone: number) => Promise<void> {
  return async (stepsDone) => {
    const all = awaitAll(ctx);
    const weights = await o.weights();
    const states = await all(
      o.holders.map((h) =>
        h.from.channel.request({ type: "fetchState" }, "state", {
          timeoutMs: ctx.spec.timeouts.stepMs,
          waitingFor: "the optimizer state to checkpoint",
        }),
      ),
    );
    const f = o.options;
    await writeCheckpoint(
      o.dir,
      {
        strategy: o.strategy,
        step: stepsDone,
        seed: f.seed,
        shuffle: f.shuffle,
        batchSize: f.batchSize,
        datasetSize: o.dataset.size,
        datasetName: o.dataset.name,
        loss: f.loss,
        optimizer: { ...f.optimizer },
        modelKey: modelKey(o.summary),
        weights: weights.map((t, i) => ({ name: `weight ${i}`, shape: [...t.shape] })),
        optimizerStates: states.map((st, i) => ({
          holder: o.holders[i]!.name,
          format: st.msg.format,
          scalars: st.msg.scalars,
          tensors: st.msg.names.map((name, j) => ({ name, shape: [...st.attachments[j]!.shape] })),
        })),
      },
      weights.map((t) => t.data as Float32Array),
      states.flatMap((st) => st.attachments.map((t) => t.data as Float32Array)),
      o.sharded ? shardedParts(ctx, o.sharded) : undefined,
    );
  };
}

/** The step loop's checkpoint options for a fit: where it starts (resumed or not), and how it saves. */
export function checkpointing(
  ctx: FitContext,
  o: ResolvedFitOptions,
  resumed: { ckpt: Checkpoint } | undefined,
  what: {
    strategy: CheckpointBody["strategy"];
    summary: ModelSummary;
    dataset: Dataset;
    holders: readonly Holder[];
    weights: () => Promise<Tensorlike[]>;
    sharded?: readonly WorkerHandle[];
  },
): { startStep: number; checkpoint?: { cadence: Cadence; save(stepsDone: number): Promise<void> } } {
  return {
    startStep: resumed?.ckpt.body.step ?? 0,
    ...(o.checkpoint
      ? {
          checkpoint: {
            cadence: o.checkpoint.cadence,
            save: checkpointSaver(ctx, { dir: o.checkpoint.dir, options: o, ...what }),
          },
        }
      : {}),
  };
}

/** resumeFrom when the fit asked for it; a bad checkpoint aborts the fit before anything is sent. */
export function resumeIfAsked(
  o: ResolvedFitOptions,
  strategy: CheckpointBody["strategy"],
  model: tf.LayersModel,
  summary: ModelSummary,
  dataset: Dataset,
): { resumed: { ckpt: Checkpoint } | undefined; options: ResolvedFitOptions } {
  if (!o.resumeFrom) return { resumed: undefined, options: o };
  try {
    const r = resumeFrom(o.resumeFrom, strategy, model, summary, dataset, o);
    return { resumed: r, options: r.options };
  } catch (err) {
    throw new FitAborted(err);
  }
}
