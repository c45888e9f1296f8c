import type { MeshtrainError } from "../errors/errors";

/** What a launcher is given to start workers that join the driver. */
export interface LaunchContext {
  /** The address they join, as they dial it (a wildcard host shown as this machine's name). */
  joinUrl: string;
  token: string;
  /** Seconds a worker waits for the driver to answer and give it a rank. */
  joinTimeoutS: number;
  /** Ends the wait for the workers at once with this error: they will not all come. */
  abort(err: MeshtrainError): void;
}

/**
 * Starts the workers of a join() cluster somewhere (this machine, ssh hosts, a Slurm job) and
 * ends them again: stop() is called when the cluster closes or its launch fails, and the
 * driver's exit ends them too (each launcher says how).
 */
export interface Launcher {
  /** Where the driver listens for these workers, when the launcher knows better than the spec (the interface towards its hosts). */
  listenHost?(): Promise<string>;
  start(ctx: LaunchContext): Promise<void>;
  /**
   * The launcher's own account of why its workers did not all join in time (a job still
   * pending, cancelled now), to replace the join's generic TimeoutError; undefined when it has none.
   */
  late?(): Promise<MeshtrainError | undefined>;
  /** For cluster.notes, once every worker has joined: where they run (a job id and its nodes, the hosts). */
  notes(): Promise<string[]>;
  stop(): Promise<void>;
}
