import type { Dataset } from "../../data/dataset";
import type { FitContext } from "../../driver/fit-context";
import { awaitAll } from "../../driver/await";
import { splitBatch } from "../../plan/batches";
import type { PipelinePlan } from "../../plan/plans";
import { validationLogs } from "../data/validate-replicas";

/** Validation activations travel under numbers above every training step's (frames number them in 32 bits). */
const VALIDATION_SEQ = 2 ** 31;

/**
 * An epoch's validation through the pipelines: each replica takes a contiguous shard of the
 * validation data, its stages pass activations forward in inference mode, `batchSize` samples
 * at a time, each stage getting the model inputs it reads and the targets of the outputs it
 * makes; the driver adds every stage's sums and divides by the samples, so the result is the
 * mean over every validation sample, as model.fit's val_loss and val_ metrics.
 */
export function validateThroughStages(
  ctx: FitContext,
  plan: PipelinePlan,
  validation: Dataset,
  batchSize: number,
): (epoch: number) => Promise<Record<string, number>> {
  const shards = splitBatch(validation.size, plan.replicas).perReplica;
  return async (epoch) => {
    let from = 0;
    const requests = plan.ranks.flatMap((row, r) => {
      const n = shards[r]!;
      const b = validation.gather(null, from, from + n);
      from += n;
      return row.map((rank, s) => {
        const st = plan.stagePlans[s]!;
        const attachments = [...st.feeds.map((k) => b.xs[k]!), ...st.heads.map((k) => b.ys[k]!)];
        const stage = { samples: n, seq: VALIDATION_SEQ + (epoch % 2 ** 30) };
        return ctx.workers[rank]!.channel.request({ type: "evaluate", batchSize, stage }, "evaluated", {
          timeoutMs: ctx.spec.timeouts.stepMs,
          waitingFor: `epoch ${epoch}'s validation on stage ${s}`,
          attachments,
        });
      });
    });
    // Every stage of a replica reports its own outputs' sums over the same samples: count them once.
    return validationLogs(await awaitAll(ctx)(requests), validation.size);
  };
}
