import { batchAttachments, type Dataset } from "../../data/dataset";
import type { FitContext } from "../../driver/fit-context";
import { awaitAll } from "../../driver/await";
import type { WorkerHandle } from "../../members/worker-handle";
import { splitBatch } from "../../plan/batches";

/**
 * An epoch's validation by the replicas: each evaluates a contiguous shard of the validation
 * data with its weights (all replicas hold the same), and the driver adds their sums, so the
 * result is the mean over every validation sample, as model.fit's. Gives val_loss and val_ of
 * each compiled metric.
 */
export function validateOnReplicas(
  ctx: FitContext,
  workers: readonly WorkerHandle[],
  validation: Dataset,
  batchSize: number,
  gathered = false,
): (epoch: number) => Promise<Record<string, number>> {
  const shards = splitBatch(validation.size, workers.length).perReplica;
  // ZeRO-3 replicas gather each layer together: all run as many batches as the largest shard needs.
  const rounds = gathered ? { rounds: Math.ceil(Math.max(0, ...shards) / batchSize) } : {};
  return async (epoch) => {
    let from = 0;
    const replies = await awaitAll(ctx)(
      workers.map((w, i) => {
        const batch = validation.gather(null, from, from + shards[i]!);
        from += shards[i]!;
        return w.channel.request({ type: "evaluate", batchSize, ...rounds }, "evaluated", {
          timeoutMs: ctx.spec.timeouts.stepMs,
          waitingFor: `epoch ${epoch}'s validation`,
          attachments: batchAttachments(batch),
        });
      }),
    );
    return validationLogs(
      replies,
      replies.reduce((n, r) => n + r.msg.samples, 0),
    );
  };
}

/** val_loss and val_ of each metric: every reply's sums added, over the validation's samples. */
export function validationLogs(
  replies: ReadonlyArray<{ msg: { lossSum: number; metricSums: Record<string, number> } }>,
  samples: number,
): Record<string, number> {
  const logs: Record<string, number> = { val_loss: replies.reduce((n, r) => n + r.msg.lossSum, 0) / samples };
  for (const r of replies)
    for (const [name, v] of Object.entries(r.msg.metricSums))
      logs[`val_${name}`] = (logs[`val_${name}`] ?? 0) + v / samples;
  return logs;
}
