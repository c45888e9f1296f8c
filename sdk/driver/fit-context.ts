import type { WorkerHandle } from "../cluster/worker-handle";
import type { ClusterSpec } from "../config/cluster-spec";
import { AbortError, type MeshtrainError } from "../errors/errors";
import type { MessageOf } from "../protocol/messages";
import type { Incoming } from "../transport/channel";
import type { Wiring } from "../plan/wiring";
import type { StepRecord } from "../metrics/records";

/** What a strategy's driver runtime gets from the cluster. */
export interface FitContext {
  readonly spec: ClusterSpec;
  /** In rank order. */
  readonly workers: readonly WorkerHandle[];
  /** Parameter servers (strategy "ps"), in server order. */
  readonly servers: readonly WorkerHandle[];
  /**
   * From now until the fit ends, a lost worker (not a server) is handed to `handler` instead of
   * failing the cluster: for strategies that carry on without it.
   */
  survive(handler: (worker: WorkerHandle, err: MeshtrainError) => void): void;
  /** From now until the fit ends, workers added with cluster.add() are handed to `handler`. */
  admit(handler: (worker: WorkerHandle) => void): void;
  /** Connects the workers (or `members`) as `wiring` says (kept as is when it is already so). */
  connect(wiring: Wiring, o?: { members?: readonly WorkerHandle[]; generation?: number }): Promise<void>;
  /** Rejects with the loss of a worker as soon as one is lost. */
  guard<T>(p: Promise<T>): Promise<T>;
  /** Resolves with the cluster's loss of a worker: at once if it happened, else if it does within `ms`. */
  lossWithin(ms: number): Promise<MeshtrainError | undefined>;
  setStep(step: number | undefined): void;
  /** Set once the fit was asked to stop (AbortSignal, interrupt, close()): loops stop at the next step boundary. */
  stopRequested(): MeshtrainError | undefined;
}

/**
 * Thrown by a runtime for a failure that left every worker in a known state (bad input found
 * before training, a model that did not load, an exception from the user's onStep): the
 * cluster stays usable and the user gets `error` itself.
 */
export class FitAborted {
  constructor(readonly error: unknown) {}
}

/** The fit's stop request (AbortSignal, interrupt, close()) as a loop's reason to stop, if there is one. */
export function stopRequest(ctx: Pick<FitContext, "stopRequested">): FitAborted | undefined {
  const e = ctx.stopRequested();
  return e ? new FitAborted(e) : undefined;
}

/**
 * What every loop does with a step (or async round) it recorded: onStep sees it; the loop stops
 * there if onStep threw or the fit was asked to stop.
 */
export function stepSeen(rec: StepRecord, onStep: ((rec: StepRecord) => void) | undefined, ctx: Pick<FitContext, "stopRequested">): FitAborted | undefined {
  try {
    onStep?.(rec);
  } catch (err) {
    return new FitAborted(err);
  }
  return stopRequest(ctx);
}

/** A stop asked for by the user, after which a checkpoint of the last whole step is still written. */
export function askedToStop(stopped: FitAborted | undefined): boolean {
  return stopped?.error instanceof AbortError;
}

/** A worker's reply to a step. */
export type StepDone = Incoming<MessageOf<"stepDone">>;
