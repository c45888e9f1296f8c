import type { MeshtrainError } from "../errors/errors";
import type { WireFormat } from "../protocol/wire-formats";
import type { AllReduceStats } from "./ring-allreduce";
import type { RingPhases } from "./segments";

export type { RingPhases };

/** A ring all-reduce, whichever data plane carries it (RingAllReduce over WebSockets, NativeRing over TCP). */
export interface AllReducer {
  /**
   * Sums `data` in place across the ring. `seq` must grow by one per call. With `wire`, the
   * packed values travel as 16-bit floats and end rounded to them, the same bits on every member
   * (an all-gather alone travels in float32).
   */
  run(
    data: Float32Array,
    seq: number,
    timeoutMs: number,
    wire?: WireFormat,
    phases?: RingPhases,
  ): Promise<AllReduceStats>;
  /** Fails the running operation and every later one with `err`. */
  fail(err: MeshtrainError): void;
  /** What the running all-reduce waits for, for stall reports; undefined when none runs. */
  waitingFor(): string | undefined;
}
