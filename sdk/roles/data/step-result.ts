import type { AllReduceStats } from "../../collectives/ring-allreduce";
import type { WireFormat } from "../../protocol/wire-formats";
import type { StepTimes } from "../role";
import type { NonFinite } from "../../compute/step-health";
import type { SlowStep } from "../../protocol/slow-step";

/** How a data-parallel replica sums its step's buffer with the others'. */
export type AllReduceFn = (
  data: Float32Array,
  wire?: WireFormat,
) => Promise<{ data: Float32Array; stats: AllReduceStats }>;

/** What a data-parallel replica's step measured and found. */
export interface StepResult extends StepTimes {
  /** Time spent waiting on purpose (a slowdown), part of computeMs. */
  slowdownMs: number;
  /** Bytes this replica sent in the all-reduce. */
  sentBytes: number;
  /** On a GPU: the step's one read back of its gradient (with loss, metrics and state) and its one upload of the sum, ms. */
  readbackMs?: number;
  uploadMs?: number;
  metrics?: Record<string, number>;
  /** Where this replica found NaN or Infinity. */
  nonFinite?: NonFinite;
  /** ZeRO-2 and -3: when each layer's collectives ran, ms from the step's start. */
  collectives?: Collective[];
  /** No replica applied this step's update (one of them found a non-finite value, or failed). */
  skipped?: boolean;
  /** This replica's slice ran more than twice what its FLOPs predict: where the time went. */
  slow?: SlowStep;
  /** The all-reduce went in buckets during the backward pass. */
  overlapped?: true;
}

/** One layer's all-gather or reduce-scatter in a ZeRO-2 or ZeRO-3 step (layer: its index among the layers with weights). */
export interface Collective {
  kind: "all-gather" | "reduce-scatter";
  /** The bucket's first layer (index among the layers with weights), and its last where it holds more than one. */
  layer: number;
  last?: number;
  start: number;
  end: number;
}
