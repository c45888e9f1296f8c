import type { HostIO } from "../../role";
import type { SliceOutcome } from "../../../compute/slice-gradient";
import { makeUpdateRule } from "../../../compute/update-rule";
import { finishBuckets, GradientBuckets } from "../buckets";
import type { ReplicaParts, StepInput } from "./gradient-sum";
import { SummedStep, type Summed } from "./summed-step";

/**
 * DDP's sum: the whole buffer all-reduced through the hook, every replica then applying the
 * same update with its own copy of the optimizer. With the plan's overlap, a hook that sends
 * each value on its own and the native step's one backward pass, the gradient goes in buckets
 * that start while the backward pass still runs (on the native data plane's thread).
 */
export class AllReduceSum extends SummedStep {
  readonly kind = "all-reduce";
  /** Buckets can go during the backward pass (the hook and the step allow it), and do unless a step says otherwise. */
  private readonly canOverlap: boolean;
  private readonly overlap: boolean;

  constructor(p: ReplicaParts) {
    super(p, makeUpdateRule(p.r.vars, p.load.optimizer), p.load.elastic ?? false);
    this.canOverlap = p.hook.elementwise && p.slice.bucketable;
    this.overlap = (p.load.overlap ?? false) && this.canOverlap;
  }

  protected buckets(flat: Float32Array, io: HostIO, s: StepInput): GradientBuckets | null {
    // A step timed the other way (the fit timing both) asks for itself; either way the sum is the same.
    const want = s.overlap === undefined ? this.overlap : s.overlap && this.canOverlap;
    const ring = want ? io.overlap() : null;
    return ring ? new GradientBuckets(flat, this.p.r.gradientLength, ring, this.p.hook, this.p.r) : null;
  }

  protected async sum(
    flat: Float32Array,
    slice: SliceOutcome,
    buckets: GradientBuckets | null,
    io: HostIO,
  ): Promise<Summed> {
    const n = this.p.r.gradientLength;
    const summed = buckets
      ? { data: flat, stats: await finishBuckets(buckets, slice, flat) }
      : await this.p.hook.sum(flat, n, (d, w) => io.allReduce(d, w));
    return { data: summed.data, stats: summed.stats, overflow: this.p.hook.overflowed(summed.data, n, this.p.r) };
  }

  protected async applySum(gradient: Float32Array, learningRate: number | undefined): Promise<number> {
    this.update.apply(gradient, learningRate);
    return 0;
  }

  protected reuse(summed: Float32Array): Float32Array {
    return summed;
  }
}
