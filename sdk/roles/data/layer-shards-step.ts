import type * as tf from "@tensorflow/tfjs";
import { wallClock } from "../../util/clock";
import { feedList, feedRows, type Feed } from "../objective";
import type { HostIO } from "../role";
import { nativeMetrics, type LoadedReplica } from "../slice-gradient";
import { inputNonFinite, survivedStepError, type NonFinite } from "../step-health";
import type { StepResult } from "./step-result";
import type { LayerShards } from "./layer-shards";

/**
 * One data-parallel step of a ZeRO-2 or ZeRO-3 replica: the slice's forward and backward pass,
 * each layer's gradient reduce-scattered (under ZeRO-3 each layer gathered too; see
 * LayerShards), then one small all-reduce of two flags, so that every replica drops the step
 * alike when a slice could not be learned from (its input or loss not finite, or its
 * computation failed) or a summed gradient went non-finite, and otherwise each updates its
 * shard (ZeRO-2: and gathers the new weights). A slice that fails before its first collective
 * still takes its part in all of them, with nothing to add.
 */
export async function layerShardsStep(shards: LayerShards, r: LoadedReplica, weight: number, x: Feed, y: Feed, io: HostIO, step: number, learningRate?: number): Promise<StepResult> {
  const t0 = performance.now();
  const startedAt = wallClock();
  const xs = feedList(x)[0]!;
  const ys = feedList(y)[0]!;
  const rows = feedRows(x);
  let failure: unknown;
  let slice: { loss: number; out: Float32Array };
  try {
    slice = await shards.slice(xs, ys, weight);
  } catch (err) {
    failure = err;
    const empty = shards.emptyBatch();
    slice = await shards.slice(empty.x, empty.y, 0);
  }
  const t1 = performance.now();
  const own: NonFinite | undefined = failure === undefined ? (inputNonFinite(xs, ys) ?? (rows > 0 && !Number.isFinite(slice.loss) ? { where: "loss" } : undefined)) : undefined;
  const flagged = own !== undefined || failure !== undefined ? 1 : 0;
  const shardBad = shards.nonFinite;
  const flags = await io.allReduce(Float32Array.of(flagged, shardBad ? 1 : 0));
  const stats = shards.stats;
  stats.waitMs += flags.stats.waitMs;
  stats.commMs += flags.stats.commMs;
  stats.bytesSent += flags.stats.bytesSent;
  const skipped = flags.data[0]! + flags.data[1]! > 0;
  // A non-finite sum where no slice was flagged went so in the sum: say which variable this replica saw it in.
  const nonFinite = own ?? (flags.data[0] === 0 && shardBad ? { where: "gradient" as const, variable: shards.nonFiniteVariable(namesOf(r)) } : undefined);
  const t2 = performance.now();
  const talked = stats.commMs + stats.waitMs;
  if (skipped) shards.dropped();
  else await shards.apply(learningRate);
  // ZeRO-2's update ends in all-gathers: their time is communication, not the update's.
  const t3 = performance.now() - (stats.commMs + stats.waitMs - talked);
  if (failure !== undefined) throw survivedStepError(failure, step);
  const metrics = rows > 0 && r.step.native ? nativeMetrics(r, r.step.native, xs, ys, slice.out) : undefined;
  return {
    loss: rows > 0 ? slice.loss : 0,
    startedAt,
    computeMs: Math.max(0, t1 - t0 - stats.commMs - stats.waitMs),
    commMs: stats.commMs,
    waitMs: stats.waitMs,
    applyMs: t3 - t2,
    slowdownMs: 0,
    sentBytes: stats.bytesSent,
    ...(metrics ? { metrics } : {}),
    ...(shards.collectives.length > 0 ? { collectives: shards.collectives } : {}),
    ...(nonFinite ? { nonFinite } : {}),
    ...(skipped ? { skipped } : {}),
  };
}

function namesOf(r: LoadedReplica): Map<tf.Variable, string> {
  return new Map(r.vars.map((v, i) => [v, r.names[i]!]));
}
