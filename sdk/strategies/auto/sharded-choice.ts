import { formatBytes, memoryTotal, shardedMemory, type MemoryEstimate } from "../../plan/memory";
import { bucketCapBytes, largestBucketBytes } from "../../plan/shard-buckets";
import type { ModelSummary } from "../../plan/model-summary";
import type { OptimizerSpec } from "../../protocol/optimizer-spec";
import type { PlanOptions } from "../../plan/plans";
import { NATIVE_BACKEND } from "../../backends/native/backend";

/**
 * Whether sharded data parallelism lets the whole model train on every worker: ZeRO-1 (each
 * worker a 1/n share of the optimizer's state) moves the bytes data parallelism moves and
 * measured 0.90-1.07x its samples/s over three runs of bench:sharded (1.02-1.07x in the last), so auto takes it before cutting the model
 * into stages. ZeRO-2 and -3 are weighed beside the stages (layerShardChoice).
 */
export function shardedChoice(
  e: MemoryEstimate,
  model: ModelSummary,
  n: number,
  cap: number,
  optimizer?: OptimizerSpec,
): { fits: boolean; reasons: string[] } {
  const need = (shard: "optimizer" | "gradients" | "parameters", bucketMB?: number): number =>
    memoryTotal(
      shardedMemory(
        e,
        shard,
        n,
        shard === "optimizer" ? 0 : largestBucketBytes(model, bucketCapBytes(shard, bucketMB)),
        optimizer,
      ),
    );
  const byHand = `ZeRO-2 would need ${layerByLayer(need, "gradients")} and ZeRO-3 ${layerByLayer(need, "parameters")} per worker (strategy("data", { shard: "gradients" | "parameters" })): auto weighs them beside the splits into stages`;
  if (n < 2) return { fits: false, reasons: [] };
  if (!e.optimizerBytes)
    return {
      fits: false,
      reasons: [`ZeRO-1 (shard: "optimizer") saves nothing here: the optimizer keeps no state; ${byHand}`],
    };
  const one = need("optimizer");
  if (one > cap)
    return {
      fits: false,
      reasons: [
        `ZeRO-1 (shard: "optimizer", each worker 1/${n} of the optimizer's state) would need ${formatBytes(one)}, above ${formatBytes(cap)}; ${byHand}`,
      ],
    };
  return {
    fits: true,
    reasons: [
      `auto chose sharded data parallelism, ZeRO-1 (shard: "optimizer"): each worker keeps 1/${n} of the optimizer's state and needs ${formatBytes(one)} of ${formatBytes(cap)}; it moves the bytes data parallelism moves (one reduce-scatter and one all-gather a step), where splitting the model would leave stages idle`,
    ],
  };
}

/** Why ZeRO-2 and -3 cannot run this plan's layers (they work inside meshtrain's native step), or null. */
function outsideNativeStep(o: PlanOptions): string | null {
  if (o.nativeLayers === undefined)
    return "not weighed: this plan was made without compiling the model's layers, which says whether meshtrain's native step computes them";
  if (o.nativeLayers) return `they work inside meshtrain's native step, and ${o.nativeLayers}`;
  const other = o.devices?.findIndex((d) => d.backend !== NATIVE_BACKEND) ?? -1;
  return other >= 0
    ? `they work inside meshtrain's native step, and worker ${other} runs TF.js's "${o.devices![other]!.backend}" backend`
    : null;
}

/**
 * ZeRO-2, else ZeRO-3, where it fits: they keep the whole model on every worker (no stage idle)
 * and shard each layer, so a model whose one layer is too big for a stage, or that has fewer
 * layers than the workers need stages, still trains; where a split fits too, the planner ranks
 * them by predicted speed. They work layer
 * by layer inside meshtrain's native step: the model's layers and the loss must be ones it
 * computes (it computes every loss model.compile names), on workers of the native backend.
 */
export function layerShardChoice(
  e: MemoryEstimate,
  model: ModelSummary,
  n: number,
  cap: number,
  o: PlanOptions,
): { shard: "gradients" | "parameters" | null; bucketMB?: number; reasons: string[] } {
  if (n < 2) return { shard: null, reasons: [] };
  const refused = (why: string) => ({
    shard: null,
    reasons: [`ZeRO-2 and -3 (shard "gradients" | "parameters"): ${why}`],
  });
  const blocked = outsideNativeStep(o);
  if (blocked) return refused(blocked);
  const need = (shard: "gradients" | "parameters", bucketMB?: number): number =>
    memoryTotal(shardedMemory(e, shard, n, largestBucketBytes(model, bucketCapBytes(shard, bucketMB)), o.optimizer));
  const [two, three] = [need("gradients"), need("parameters")];
  const fits = `each worker keeps the whole weights and 1/${n} of the gradient and the optimizer's state, and needs`;
  if (two <= cap)
    return {
      shard: "gradients",
      reasons: [
        `ZeRO-2 (shard: "gradients") fits: ${fits} ${formatBytes(two)} of ${formatBytes(cap)}; it moves the bytes data parallelism moves`,
      ],
    };
  // Their buckets of layers are for speed: where they do not fit, one layer at a time may.
  const single = need("gradients", 0);
  if (single <= cap)
    return {
      shard: "gradients",
      bucketMB: 0,
      reasons: [
        `ZeRO-2 (shard: "gradients") fits with each layer a bucket of its own (bucketMB 0; its default buckets would need ${formatBytes(two)}): ${fits} ${formatBytes(single)} of ${formatBytes(cap)}; it moves the bytes data parallelism moves, in more collectives`,
      ],
    };
  const everything = `each worker keeps 1/${n} of everything and gathers`;
  const moves = "it moves 1.5x the bytes data parallelism moves";
  if (three <= cap)
    return {
      shard: "parameters",
      reasons: [
        `ZeRO-2 would need ${formatBytes(single)}, even a layer at a time`,
        `ZeRO-3 (shard: "parameters") fits: ${everything} a bucket of layers at a time, and needs ${formatBytes(three)} of ${formatBytes(cap)}; ${moves}`,
      ],
    };
  const one = need("parameters", 0);
  if (one <= cap)
    return {
      shard: "parameters",
      bucketMB: 0,
      reasons: [
        `ZeRO-2 would need ${formatBytes(single)}, even a layer at a time`,
        `ZeRO-3 (shard: "parameters") fits with each layer a bucket of its own (bucketMB 0; its default buckets would need ${formatBytes(three)}): ${everything} one layer at a time, and needs ${formatBytes(one)} of ${formatBytes(cap)}; ${moves}, in more collectives`,
      ],
    };
  return refused(
    `ZeRO-2 would need ${formatBytes(single)} (a layer at a time) and ZeRO-3 ${formatBytes(one)} (a layer at a time) per worker, above ${formatBytes(cap)}`,
  );
}

/** What a ZeRO-2 or -3 replica needs a layer at a time, and in its default buckets where that is more. */
function layerByLayer(
  need: (shard: "gradients" | "parameters", bucketMB?: number) => number,
  shard: "gradients" | "parameters",
): string {
  const [single, buckets] = [need(shard, 0), need(shard)];
  return buckets > single
    ? `${formatBytes(single)} a layer at a time (${formatBytes(buckets)} in its default buckets)`
    : formatBytes(single);
}
