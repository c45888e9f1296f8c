import type { WorkerHandle } from "../members/worker-handle";
import type { ClusterSpec } from "../config/cluster-spec";
import type { MeshtrainError } from "../errors/errors";
import type { MessageOf } from "../protocol/messages";
import type { Incoming } from "../transport/channel";
import type { Wiring } from "../plan/wiring";

/** What a strategy's driver runtime gets from the cluster. */
export interface FitContext {
  readonly spec: ClusterSpec;
  /** In rank order. */
  readonly workers: readonly WorkerHandle[];
  /** Parameter servers (strategy "ps"), in server order. */
  readonly servers: readonly WorkerHandle[];
  /**
   * From now until the fit ends, a lost worker (not a server, unless `servers`) is handed to
   * `handler` instead of failing the cluster: for strategies that carry on without it or replace it.
   */
  survive(handler: (worker: WorkerHandle, err: MeshtrainError) => void, o?: { servers?: boolean }): void;
  /**
   * A lost worker's place taken, as cluster.add() with no address does: by an idle spare, else
   * (`orNew`) a new local worker or after join() the next that joins. Resolves with its rank, or
   * null when no spare is idle and not `orNew`.
   */
  replace(orNew: boolean): Promise<number | null>;
  /** An idle spare in a lost worker's (or server's) place, as the same rank (its stage, its shard); null when none is idle. */
  substitute(lost: WorkerHandle): WorkerHandle | null;
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

/** A worker's reply to a step. */
export type StepDone = Incoming<MessageOf<"stepDone">>;
