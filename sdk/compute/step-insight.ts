import * as tf from "@tensorflow/tfjs";
import type { NativeStep } from "../backends/native/step/native-step";
import { summarizeModel } from "../plan/model-summary";
import type { SlowStep } from "../protocol/slow-step";

/** The step compared with its FLOPs' prediction (the first ones warm up the arrays and kernels). */
const CHECK = 4;
/**
 * Slices timed layer by layer, each layer's least time kept: a small model's step takes under a
 * millisecond, and one collection or preemption inside one layer would otherwise name it.
 */
const DETAIL = 3;
/** How much slower than the FLOPs predict a step must be to be looked into. */
const FACTOR = 2;
/** The backward pass costs about twice the forward: a step is three forwards' FLOPs. */
const STEP_PER_FORWARD = 3;

/** FLOPs a millisecond of a 256 x 256 x 256 matrix product on this worker's backend: what a step's FLOPs are priced at. */
async function gemmRate(): Promise<number> {
  const a = tf.randomUniform([256, 256]);
  const b = tf.randomUniform([256, 256]);
  let best = Infinity;
  for (let i = 0; i < 4; i++) {
    const t0 = performance.now();
    const c = tf.matMul(a, b);
    await c.data();
    best = Math.min(best, performance.now() - t0);
    c.dispose();
  }
  tf.dispose([a, b]);
  return (2 * 256 ** 3) / Math.max(best, 1e-3);
}

/**
 * Watches a replica's slices: at the CHECK-th, whether its compute ran more than FACTOR times
 * what the model's FLOPs predict at the worker's measured matrix-product speed; if so, the next
 * DETAIL slices are timed layer by layer (the native step) or the next one kernel by kernel
 * (TF.js's profile of the autodiff step), and the report goes out with the last, once.
 */
export class StepInsight {
  private slices = 0;
  private flopsPerSample: number;
  private suspect: { measuredMs: number; predictedMs: number; gflops: number } | null = null;
  private pending: SlowStep | null = null;
  /** Each layer's least ms over the slices timed so far. */
  private least = new Map<string, number>();

  constructor(
    model: tf.LayersModel,
    private readonly native: NativeStep | null,
  ) {
    this.flopsPerSample = STEP_PER_FORWARD * summarizeModel(model).flopsPerSample;
  }

  /** Runs one slice's compute of `batch` samples, timing it where this is the slice looked at. */
  async around<T>(batch: number, run: () => Promise<T>): Promise<T> {
    this.slices++;
    if (this.suspect && this.slices === CHECK + 1) return this.detail(run);
    if (this.suspect && this.native && this.slices > CHECK + 1 && this.slices <= CHECK + DETAIL) return this.again(run);
    if (this.slices !== CHECK || batch === 0 || this.flopsPerSample === 0) return run();
    const t0 = performance.now();
    const out = await run();
    const measuredMs = performance.now() - t0;
    const rate = await gemmRate();
    const predictedMs = (this.flopsPerSample * batch) / rate;
    if (measuredMs > FACTOR * predictedMs) this.suspect = { measuredMs, predictedMs, gflops: rate / 1e6 };
    return out;
  }

  private async detail<T>(run: () => Promise<T>): Promise<T> {
    const s = this.suspect!;
    if (this.native) {
      this.native.timeOps(true);
      const out = await run();
      this.least = new Map(this.native.timeOps(false).map((o) => [o.layer, o.forwardMs + o.backwardMs]));
      return out;
    }
    let out: T | undefined;
    const p = await tf.profile(async () => {
      out = await run();
    });
    const by = new Map<string, { ms: number; count: number }>();
    for (const k of p.kernels) {
      const e = by.get(k.name) ?? { ms: 0, count: 0 };
      e.ms += Number(k.kernelTimeMs) || 0;
      e.count++;
      by.set(k.name, e);
    }
    const top = [...by.entries()]
      .sort((a, b) => b[1].ms - a[1].ms)
      .slice(0, 8)
      .map(([name, e]) => ({ name, ms: e.ms, count: e.count }));
    this.pending = { ...s, by: "kernels", top };
    return out as T;
  }

  /** Another slice timed layer by layer: each layer's least time so far; the report goes with the last. */
  private async again<T>(run: () => Promise<T>): Promise<T> {
    this.native!.timeOps(true);
    const out = await run();
    for (const o of this.native!.timeOps(false))
      this.least.set(o.layer, Math.min(this.least.get(o.layer) ?? Infinity, o.forwardMs + o.backwardMs));
    if (this.slices === CHECK + DETAIL) {
      const top = [...this.least.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 8)
        .map(([name, ms]) => ({ name, ms }));
      this.pending = { ...this.suspect!, by: "layers", top };
    }
    return out;
  }

  /** The report, once it is made (then never again). */
  take(): SlowStep | undefined {
    const r = this.pending;
    this.pending = null;
    return r ?? undefined;
  }
}
