import type { LoadOf } from "../../protocol/messages";
import { feedRows, type Feed } from "../../compute/objective";
import { checkedSliceGradient, type SliceExtras, type SliceOutcome } from "../../compute/slice-gradient";
import { type LoadedReplica } from "../../compute/loaded-replica";
import { accumulatedSlice } from "./accumulate-slices";
import type { GradientBuckets } from "./buckets";
import type { AllReduceFn } from "./step-result";
import { SyncNorm } from "./sync-batchnorm";

/** How a replica computes its slice's gradient: in one pass, in accumulated chunks, or with sync batch norm's rounds. */
type Compute = (
  x: Feed,
  y: Feed,
  weight: number,
  grads: Float32Array,
  extra: SliceExtras,
  allReduce: AllReduceFn,
  step: number,
) => Promise<SliceOutcome>;

/**
 * A replica's part of a step's buffer [gradient | change of state | flag]: its weighted gradient
 * and change of state, or nothing but the flag when its slice cannot be learned from
 * (non-finite) or it threw. How the gradient is computed is chosen once, at load.
 */
export class ReplicaSlice {
  private readonly compute: Compute;
  private readonly kind: "pass" | "chunks" | "rounds";

  constructor(
    private readonly r: LoadedReplica,
    load: Pick<LoadOf<"replica">, "batchNorm" | "accumulate">,
  ) {
    const k = load.accumulate ?? 1;
    this.kind = load.batchNorm === "sync" ? "rounds" : k > 1 ? "chunks" : "pass";
    if (this.kind === "rounds") {
      const sync = new SyncNorm(r.model);
      this.compute = (x, y, weight, grads, extra, allReduce, step) =>
        sync.slice(r, x, y, weight, grads, extra.stateNow, allReduce, step);
    } else if (this.kind === "chunks")
      this.compute = (x, y, weight, grads, extra) => accumulatedSlice(r, k, x, y, weight, grads, extra);
    else this.compute = (x, y, weight, grads, extra) => checkedSliceGradient(r, x, y, weight, grads, extra);
  }

  /** Whether the gradient can go in buckets while the one backward pass runs (with chunks or rounds, the sum is ready only after the last). */
  get bucketable(): boolean {
    return this.r.step.native !== null && this.kind === "pass";
  }

  /** Fills `flat`: the weighted gradient and change of state, or the flag. */
  async fill(
    weight: number,
    x: Feed,
    y: Feed,
    flat: Float32Array,
    stateBefore: Float32Array,
    buckets: GradientBuckets | null,
    allReduce: AllReduceFn,
    step: number,
  ): Promise<SliceOutcome> {
    const n = this.r.gradientLength;
    const stateNow = new Float32Array(this.r.state.length);
    // Properties set one by one: a spread of per-step objects left them in V8's old generation (see native-step.ts).
    const extra: SliceExtras = {};
    if (buckets) extra.ready = buckets.ready;
    if (stateNow.length > 0) extra.stateNow = stateNow;
    const out = await this.compute(x, y, weight, flat.subarray(0, n), extra, allReduce, step);
    if (out.nonFinite || out.failure !== undefined) flat[flat.length - 1] = 1;
    else if (feedRows(x) > 0)
      this.r.state.writeChange(stateBefore, weight, flat.subarray(n, flat.length - 1), stateNow);
    return out;
  }
}
