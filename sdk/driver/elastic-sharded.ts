import type { WorkerHandle } from "../members/worker-handle";
import type { Cadence } from "./checkpoint/cadence";

/**
 * What an elastic fit of sharded data parallelism (ZeRO) needs beyond plain data parallelism's:
 * each replica holds the only copy of its part of the optimizer's state, so a lost worker takes
 * that part with it and the members go back to the last checkpoint, loaded again and re-sharded
 * over the survivors (the steps since run again); joining workers are added at a step boundary
 * by re-sharding the members' state, held in the driver meanwhile, over all of them.
 */
export interface ShardedElastic {
  /** When checkpoints are due (fit option checkpoint.every): the steps between two are what a loss can cost. */
  cadence: Cadence;
  /** Writes a checkpoint of the members after `stepsDone` steps; false when a member was lost meanwhile (nothing written). */
  save(members: readonly WorkerHandle[], stepsDone: number): Promise<boolean>;
  /** Loads every member again from the last checkpoint, re-sharded over them; returns its step. */
  fromCheckpoint(members: readonly WorkerHandle[]): Promise<number>;
  /** Takes the members' weights and state, re-forms the ring (`rewire`), and loads all of `all` re-sharded over them. */
  regroup(members: readonly WorkerHandle[], all: readonly WorkerHandle[], rewire: () => Promise<void>): Promise<void>;
}
