import { formatBytes, largestLayerBytes, memoryTotal, shardedMemory, type MemoryEstimate } from "../../plan/memory";
import type { ModelSummary } from "../../plan/model-summary";
import type { OptimizerSpec } from "../../protocol/optimizer-spec";

/**
 * Whether sharded data parallelism lets the whole model train on every worker: ZeRO-1 (each
 * worker a 1/n share of the optimizer's state) moves the bytes data parallelism moves and
 * measured 0.90-1.02x its samples/s over two runs of bench:sharded, so auto takes it before cutting the model
 * into stages. ZeRO-2 and -3 are named with what they would need, not chosen: they work layer by
 * layer inside meshtrain's native step, and only the workers can tell, when the model loads,
 * whether it trains there.
 */
export function shardedChoice(e: MemoryEstimate, model: ModelSummary, n: number, cap: number, optimizer?: OptimizerSpec): { fits: boolean; reasons: string[] } {
  const need = (shard: "optimizer" | "gradients" | "parameters"): number => memoryTotal(shardedMemory(e, shard, n, largestLayerBytes(model), optimizer));
  const byHand = `ZeRO-2 would need ${formatBytes(need("gradients"))} and ZeRO-3 ${formatBytes(need("parameters"))} per worker (strategy("data", { shard: "gradients" | "parameters" })): auto does not choose them, as only the workers can tell when the model loads whether it trains inside meshtrain's native step, which they need`;
  if (n < 2) return { fits: false, reasons: [] };
  if (!e.optimizerBytes) return { fits: false, reasons: [`ZeRO-1 (shard: "optimizer") saves nothing here: the optimizer keeps no state; ${byHand}`] };
  const one = need("optimizer");
  if (one > cap) return { fits: false, reasons: [`ZeRO-1 (shard: "optimizer", each worker 1/${n} of the optimizer's state) would need ${formatBytes(one)}, above ${formatBytes(cap)}; ${byHand}`] };
  return {
    fits: true,
    reasons: [`auto chose sharded data parallelism, ZeRO-1 (shard: "optimizer"): each worker keeps 1/${n} of the optimizer's state and needs ${formatBytes(one)} of ${formatBytes(cap)}; it moves the bytes data parallelism moves (one reduce-scatter and one all-gather a step), where splitting the model would leave stages idle`],
  };
}
