import type { AllReduceStats } from "../../collectives/ring-allreduce";
import type { OverlapRing } from "../role";
import type { CommHook } from "./hooks/comm-hook";
import type { SliceOutcome } from "../../compute/slice-gradient";
import { nonFiniteVariable, type NonFinite } from "../../compute/step-health";
import { hasNonFinite } from "../../backends/native/finite";

/** DDP's sizes: a small first bucket, so communication starts early, then 25 MB ones. */
export const FIRST_BUCKET_BYTES = 1 << 20;
export const BUCKET_BYTES = 25 << 20;

/**
 * A replica's buffer [gradient | state | flag] all-reduced in buckets while the backward pass
 * still runs (as DDP does): the backward pass writes the last layers' gradients first, and once
 * those from some offset on make a bucket, their all-reduce starts on the native data plane's
 * thread while this one computes the layers before. Each bucket is checked for NaN and
 * Infinity (then zeroed: the flag makes every replica drop the step) and compressed before it
 * leaves; a bucket already sent is never written again. The state and the flag go last, once
 * the whole slice is known.
 */
export class GradientBuckets {
  /** Gradient values [sentFrom, n) have been started. */
  private sentFrom: number;
  private found: NonFinite | undefined;

  constructor(
    private readonly flat: Float32Array,
    private readonly n: number,
    private readonly ring: OverlapRing,
    private readonly hook: CommHook,
    private readonly vars: { names: readonly string[]; sizes: readonly number[] },
  ) {
    this.sentFrom = n;
  }

  /** Where a bucket found NaN or Infinity, if one did. */
  get nonFinite(): NonFinite | undefined {
    return this.found;
  }

  /** Whether every value was sent in one all-reduce at the end (nothing overlapped). */
  get whole(): boolean {
    return this.sentFrom === this.n;
  }

  /** gradient[from..n) are final: starts those not sent yet once they make a bucket. */
  ready = (from: number): void => {
    const cap = this.whole ? FIRST_BUCKET_BYTES : BUCKET_BYTES;
    if ((this.sentFrom - from) * 4 < cap) return;
    this.send(from, this.sentFrom);
    this.sentFrom = from;
  };

  /**
   * After the backward pass (or its failure, `flagged`): the gradient not sent yet, then the
   * state and flag, which `writeTail` fills in; resolves when every bucket is summed.
   */
  async finish(flagged: boolean, writeTail: (flagged: boolean) => void): Promise<AllReduceStats> {
    const tail = this.flat.subarray(this.n);
    if (flagged) this.flat.fill(0, 0, this.sentFrom);
    if (this.whole) {
      // Nothing left early: one all-reduce of the whole buffer, as without overlap.
      this.check(0, this.n, flagged);
      writeTail(flagged || this.found !== undefined);
      this.ring.start(this.flat, this.hook.wire(this.n));
    } else {
      if (this.sentFrom > 0) this.send(0, this.sentFrom, flagged);
      writeTail(flagged || this.found !== undefined);
      this.ring.start(tail);
    }
    const all = await this.ring.done();
    return {
      waitMs: all.reduce((a, s) => a + s.waitMs, 0),
      commMs: all.reduce((a, s) => a + s.commMs, 0),
      bytesSent: all.reduce((a, s) => a + s.bytesSent, 0),
    };
  }

  private send(from: number, to: number, flagged = false): void {
    this.check(from, to, flagged);
    const part = this.flat.subarray(from, to);
    this.ring.start(part, this.hook.wire(part.length));
  }

  /** Checks and compresses gradient[from, to) before it leaves; zeroes it when it holds NaN or Infinity. */
  private check(from: number, to: number, flagged: boolean): void {
    const part = this.flat.subarray(from, to);
    if (!flagged && hasNonFinite(part)) {
      this.found ??= {
        where: "gradient",
        variable: nonFiniteVariable(this.flat, this.vars.names, this.vars.sizes, from, to) ?? "?",
      };
      part.fill(0);
    }
    if (!flagged && this.found === undefined) this.hook.round(part, from);
  }
}

/**
 * The buckets not sent during the backward pass, then the state and flag; a bucket's NaN or
 * Infinity joins the slice's findings. The times reported are those the step waited after
 * computing (what overlap hid is not counted), waiting for peers first.
 */
export async function finishBuckets(
  buckets: GradientBuckets,
  slice: SliceOutcome,
  flat: Float32Array,
): Promise<AllReduceStats> {
  const flagged = slice.nonFinite !== undefined || slice.failure !== undefined;
  const t0 = performance.now();
  const stats = await buckets.finish(flagged, (flag) => {
    if (flag) flat[flat.length - 1] = 1;
  });
  const exposed = performance.now() - t0;
  if (!flagged && buckets.nonFinite) slice.nonFinite = buckets.nonFinite;
  const waitMs = Math.min(stats.waitMs, exposed);
  return { waitMs, commMs: exposed - waitMs, bytesSent: stats.bytesSent };
}
