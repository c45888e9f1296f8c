import type { WireFormat } from "../../../protocol/wire-formats";
import type { NonFinite } from "../../../compute/step-health";
import type { AllReduceFn } from "../step-result";

/** The variables' names and sizes, to say which one a non-finite value lies in. */
export interface VariableNames {
  readonly names: readonly string[];
  readonly sizes: readonly number[];
}

/**
 * What a replica's gradient becomes on its way to the sum, chosen once at load (DDP's
 * communication hooks). The buffer summed is [gradient (n values) | state | flag]; a hook changes
 * only how the gradient goes. Every summing scheme calls it the same way: `round` each part of
 * the gradient before it leaves, `wire` to say how it travels, `settled` once the replicas kept
 * or dropped the step.
 */
export interface CommHook {
  /** Its name in the table. */
  readonly kind: string;
  /**
   * Whether each value is sent on its own (rounded where it lies), so that the gradient may go
   * in parts: in buckets during the backward pass, or reduce-scattered (ZeRO). A hook that
   * needs the whole gradient at once (PowerSGD's factors) cannot.
   */
  readonly elementwise: boolean;
  /** Rounds gradient values in place as the wire will carry them; `offset`: where `part` lies in the gradient. */
  round(part: Float32Array, offset: number): void;
  /** How an all-reduce whose first `packed` values are gradient sends them (undefined: float32). */
  wire(packed: number): WireFormat | undefined;
  /** Sums [gradient (n values) | rest] with every replica's; the sum laid out as `flat` is. */
  sum(flat: Float32Array, n: number, allReduce: AllReduceFn): ReturnType<AllReduceFn>;
  /** Where a sum of finite gradients went non-finite in the hook's format (a 16-bit overflow), if it did. */
  overflowed(sum: Float32Array, n: number, vars: VariableNames): NonFinite | undefined;
  /** The replicas applied the step's sum (true) or dropped it: what the hook carries to the next step follows. */
  settled(kept: boolean): void;
  /** What it carries is forgotten: the step it belonged to was stepped back from. */
  clear(): void;
}
