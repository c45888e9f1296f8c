import type { WorkerHandle } from "../members/worker-handle";
import { ReplicaDivergenceError } from "../errors/errors";
import { awaitAll } from "./await";
import type { FitContext } from "./fit-context";

/** Replicas that must hold identical weights are checked by SHA-256 digests. */
export async function checkIdentical(
  ctx: FitContext,
  group: readonly WorkerHandle[],
  what: string,
  steps: number,
): Promise<void> {
  const all = awaitAll(ctx);
  const digests = await all(
    group.map((w) =>
      w.channel.request({ type: "digest" }, "digestReply", {
        timeoutMs: ctx.spec.timeouts.stepMs,
        waitingFor: "a weights digest",
      }),
    ),
  );
  const distinct = new Set(digests.map((d) => d.msg.digest));
  if (distinct.size !== 1) {
    throw new ReplicaDivergenceError(
      `after ${steps} steps the ${group.length} replicas of ${what} hold ${distinct.size} different sets of weights`,
      {
        hint: "this is a meshtrain bug; please report it with the model and options",
      },
    );
  }
}
