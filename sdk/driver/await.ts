import { ModelError, WorkerLostError, type MeshtrainError } from "../errors/errors";
import type { WorkerHandle } from "../members/worker-handle";
import type { MemberMemory } from "../metrics/records";
import { type FitContext } from "./fit-context";
import { FitAborted } from "./fit-stop";

/** Waits for one reply per request; a lost worker is the error reported, whatever else failed. */
export function awaitAll(ctx: FitContext): <T>(requests: Array<Promise<T>>) => Promise<T[]> {
  return async <T>(requests: Array<Promise<T>>): Promise<T[]> => {
    requests.forEach((r) => r.catch(() => undefined));
    try {
      return await ctx.guard(Promise.all(requests));
    } catch (err) {
      if (survived(err)) throw err;
      // A peer's collective error or a closed channel is often the echo of a worker the cluster
      // is about to declare lost (with its exit code, or its silence): wait for that.
      throw (await ctx.lossWithin(Math.max(1000, 2 * ctx.spec.heartbeat.intervalMs + 500))) ?? err;
    }
  };
}

/**
 * Whether one of `members` is (or within `ms` becomes) lost: a failed request is usually the echo
 * of a loss the cluster is about to report, with its exit code or its silence.
 */
export async function memberLostWithin(members: readonly WorkerHandle[], ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!members.some((h) => h.lost) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return members.some((h) => h.lost);
}

/**
 * For a fit that survives its members' losses (FitContext.lossWithin in its place): the loss of
 * one of `members` within `ms`, else the cluster's if it has one. The cluster never reports a
 * member's loss a fit survives, so waiting for the cluster's alone would wait out `ms` in vain.
 */
export async function memberLoss(
  ctx: FitContext,
  members: readonly WorkerHandle[],
  ms: number,
): Promise<MeshtrainError | undefined> {
  return (await memberLostWithin(members, ms)) ? members.find((h) => h.lost)?.lost : ctx.lossWithin(0);
}

/** How long a failed request waits for the loss it may echo: two heartbeats and a half, at least a second. */
function echoGraceMs(ctx: FitContext): number {
  return Math.max(1000, 2 * ctx.spec.heartbeat.intervalMs + 500);
}

/**
 * Whether `err`, in a fit that survives losses, echoes the loss of one of `members`: it is no
 * stop, and one of them is lost or becomes so within the grace.
 */
export async function echoesLoss(ctx: FitContext, members: readonly WorkerHandle[], err: unknown): Promise<boolean> {
  return !(err instanceof FitAborted) && !survived(err) && (await memberLostWithin(members, echoGraceMs(ctx)));
}

/** A model that fails to load on the workers leaves them idle and consistent: not fatal. */
export async function loadEverywhere<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (err instanceof WorkerLostError) throw err;
    throw new FitAborted(err);
  }
}

/**
 * Refuses a load where some worker built other gradients than the driver's model has trainable
 * parameters (a model rebuilt differently: a frozen part training): a ModelError, thrown inside
 * loadEverywhere, so the fit is refused and the cluster stays ready.
 */
export function refuseOtherGradients(gradientLengths: readonly number[], trainableParamCount: number): void {
  const lengths = new Set(gradientLengths);
  if (lengths.size !== 1 || !lengths.has(trainableParamCount)) {
    throw new ModelError(
      `workers built gradients of ${[...lengths].join(", ")} elements; the driver's model has ${trainableParamCount} trainable parameters`,
    );
  }
}

/** Tells every worker the fit is over (they drop the model). */
export async function releaseAll(ctx: FitContext): Promise<MemberMemory[]> {
  return await release(ctx, ctx.workers);
}

/** Tells `members` the fit is over (they drop the model); what each measured of its memory during the fit. */
export async function release(ctx: FitContext, members: readonly WorkerHandle[]): Promise<MemberMemory[]> {
  const replies = await awaitAll(ctx)(
    members.map((w) =>
      w.channel.request({ type: "release" }, "released", {
        timeoutMs: ctx.spec.timeouts.stepMs,
        waitingFor: "release",
      }),
    ),
  );
  return replies.flatMap((r, i) =>
    r.msg.memory ? [{ rank: members[i]!.rank, role: members[i]!.role, ...r.msg.memory }] : [],
  );
}

/** A worker's step failed but the worker did its part of the step's communication: the cluster is consistent. */
export function survived(err: unknown): boolean {
  return (
    typeof err === "object" &&
    err !== null &&
    (err as { details?: { clusterIntact?: unknown } }).details?.clusterIntact === true
  );
}
