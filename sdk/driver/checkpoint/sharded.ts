import type * as tf from "@tensorflow/tfjs";
import { CheckpointError } from "../../errors/errors";
import {
  copyOverlap,
  flatten,
  listFlat,
  rangesLength,
  readFlat,
  unflatten,
  wholePieces,
  type FlatRanges,
  type FlatState,
} from "../../model/flat-state";
import type { WorkerHandle } from "../../members/worker-handle";
import { awaitAll } from "../await";
import type { FitContext } from "../fit-context";
import { readRanges, type Shards } from "./parts";
import type { Checkpoint, PartWriter } from "./store";

/**
 * Sharded checkpoints of data parallelism (ZeRO-1, -2, -3): every replica's optimizer state is
 * written to a part of its own, laid flat over its ranges of the flat parameters, one replica
 * at a time. A fit resumes from them on any number of replicas, sharded or not, and a sharded
 * fit from a whole checkpoint: each replica is sent what falls in its ranges now.
 */

/** A sharded replica's optimizer state, laid flat over its ranges. */
export async function fetchPart(ctx: FitContext, w: WorkerHandle, why: string): Promise<FlatState> {
  const [st] = await awaitAll(ctx)([
    w.channel.request({ type: "fetchState" }, "state", {
      timeoutMs: ctx.spec.timeouts.stepMs,
      waitingFor: `worker ${w.rank}'s part of the optimizer state ${why}`,
    }),
  ]);
  const { msg, attachments } = st!;
  if (!msg.ranges)
    throw new CheckpointError(
      `worker ${w.rank} sent its optimizer state whole, where a sharded replica sends its part`,
    );
  return readFlat({
    format: msg.format,
    scalars: msg.scalars,
    ranges: msg.ranges,
    tensors: msg.names.map((name, j) => ({
      name,
      data: attachments[j]!.data as Float32Array,
      shape: [...attachments[j]!.shape],
    })),
  });
}

/** The parts of a checkpoint: each replica's state fetched and written in turn, so the driver never holds more than one. */
export function shardedParts(ctx: FitContext, workers: readonly WorkerHandle[]): (put: PartWriter) => Promise<Shards> {
  return async (put) => {
    let first: FlatState | undefined;
    const parts: Shards["parts"] = [];
    for (const [i, w] of workers.entries()) {
      const flat = await fetchPart(ctx, w, "to checkpoint");
      first ??= flat;
      parts.push({ ...put(i, flat.slots), ranges: flat.ranges });
    }
    return {
      format: first?.format ?? "native",
      slots: first?.slots.length ?? 0,
      head: first?.head ?? [],
      scalars: first?.scalars ?? {},
      parts,
    };
  };
}

/** What any ranges of the replicas' parts (held in memory) hold. */
export function partsSource(parts: readonly FlatState[]): (want: FlatRanges) => FlatState {
  return (want) => {
    const length = rangesLength(want);
    const first = parts[0]!;
    const slots = first.slots.map((_, j) => {
      const out = new Float32Array(length);
      for (const p of parts) copyOverlap(p.slots[j]!, p.ranges, out, want);
      return out;
    });
    return { ...first, ranges: want, slots };
  };
}

/** The trainable variables' shapes, in the order replicas lay them out flat, and the one range they span. */
function layoutOf(model: tf.LayersModel): { shapes: number[][]; all: FlatRanges } {
  const shapes = model.trainableWeights.map((w) => [...w.shape] as number[]);
  return { shapes, all: [[0, shapes.reduce((a, s) => a + s.reduce((x, d) => x * d, 1), 0)]] };
}

/** What any ranges of the checkpoint's optimizer state hold, from its parts or from its one whole holder. */
function source(ckpt: Checkpoint, model: tf.LayersModel): (want: FlatRanges) => FlatState {
  const shards = ckpt.body.shards;
  if (shards)
    return (want) => ({
      format: shards.format,
      ranges: want,
      slots: readRanges(ckpt.path, shards, want),
      head: shards.head,
      scalars: shards.scalars,
    });
  const [holder, ...others] = ckpt.body.optimizerStates;
  if (!holder || others.length > 0 || holder.holder !== "replica") {
    throw new CheckpointError(
      `the checkpoint ${ckpt.path} holds the optimizer state of ${ckpt.body.optimizerStates.map((s) => `"${s.holder}"`).join(", ")}; a sharded fit resumes from data parallelism's`,
      { details: { file: ckpt.path } },
    );
  }
  const { shapes, all } = layoutOf(model);
  const listed = {
    format: holder.format,
    scalars: holder.scalars,
    tensors: holder.tensors.map((t, i) => ({ name: t.name, shape: t.shape, data: ckpt.optimizer[i]! })),
  };
  return partsSource([flatten(listed, all, wholePieces(holder.format, String(ckpt.body.optimizer.name), shapes))]);
}

/** Sends each sharded replica, one at a time, the checkpoint's optimizer state of the ranges it holds. */
export function restoreShards(
  ctx: FitContext,
  ckpt: Checkpoint,
  model: tf.LayersModel,
  workers: readonly WorkerHandle[],
): Promise<void> {
  return restoreShardsFrom(ctx, source(ckpt, model), workers);
}

/** Sends each sharded replica, one at a time, what `read` holds of the ranges it holds. */
export async function restoreShardsFrom(
  ctx: FitContext,
  read: (want: FlatRanges) => FlatState,
  workers: readonly WorkerHandle[],
): Promise<void> {
  const all = awaitAll(ctx);
  const timeoutMs = ctx.spec.timeouts.stepMs;
  for (const w of workers) {
    const [held] = await all([
      w.channel.request({ type: "fetchState", only: "ranges" }, "state", {
        timeoutMs,
        waitingFor: `worker ${w.rank} to say which parameters it holds state for`,
      }),
    ]);
    const flat = listFlat(read(held!.msg.ranges ?? []));
    const attachments = flat.tensors.map((t) => ({ data: t.data, shape: t.shape }));
    await all([
      w.channel.request(
        {
          type: "setState",
          format: flat.format,
          names: flat.tensors.map((t) => t.name),
          scalars: flat.scalars,
          ranges: flat.ranges,
        },
        "stateSet",
        { timeoutMs, waitingFor: `worker ${w.rank}'s part of the checkpoint's optimizer state to load`, attachments },
      ),
    ]);
  }
}

/** A sharded checkpoint as one "replica" holder's whole state, for a fit whose replicas each hold all of it. */
export function wholeOf(ckpt: Checkpoint, model: tf.LayersModel): Checkpoint {
  const shards = ckpt.body.shards;
  if (!shards) return ckpt;
  const { shapes, all } = layoutOf(model);
  const listed = unflatten(
    source(ckpt, model)(all),
    wholePieces(shards.format, String(ckpt.body.optimizer.name), shapes),
  );
  const holder = {
    holder: "replica",
    format: listed.format,
    scalars: listed.scalars,
    tensors: listed.tensors.map((t) => ({ name: t.name, shape: t.shape })),
  };
  return { ...ckpt, body: { ...ckpt.body, optimizerStates: [holder] }, optimizer: listed.tensors.map((t) => t.data) };
}
