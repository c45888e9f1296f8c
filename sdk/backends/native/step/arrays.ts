import type { Schedule } from "./schedule";

/**
 * The arrays a compiled step computes in, planned from its schedule and kept from step to step:
 * each storage's values and gradient, each op's saved arrays, and temporaries shared by all ops
 * (one op runs at a time). Each is sized for the largest batch (and sequence) met so far; a
 * smaller one computes in views of their first elements, so a step makes no new arrays.
 */
export class StepArrays {
  readonly values: Float32Array[] = [];
  readonly grads: Float32Array[] = [];
  readonly saved: Float32Array[][] = [];
  readonly temps: Float32Array[] = [];
  /** Bumped whenever an array is replaced by a larger one: views made before are stale. */
  generation = 0;

  /** Makes every array at least as large as `batch` samples of `s` need (the inputs' values are the caller's). */
  fit(s: Schedule, batch: number): void {
    s.slots.valueSizes.forEach((n, i) => {
      if (!s.slots.inputs.has(i)) this.values[i] = this.grow(this.values[i], n * batch);
    });
    s.slots.gradSizes.forEach((n, i) => (this.grads[i] = this.grow(this.grads[i], n * batch)));
    s.ops.forEach((o, k) => {
      const list = (this.saved[k] ??= []);
      o.op.saved(batch).forEach((n, j) => (list[j] = this.grow(list[j], n)));
      o.op.temps(batch).forEach((n, j) => (this.temps[j] = this.grow(this.temps[j], n)));
    });
  }

  private grow(a: Float32Array | undefined, n: number): Float32Array {
    if (a && a.length >= n) return a;
    this.generation++;
    return new Float32Array(n);
  }

  /** Bytes held. */
  get bytes(): number {
    const all = [...this.values, ...this.grads, ...this.saved.flat(), ...this.temps].filter(
      (a): a is Float32Array => a !== undefined,
    );
    return 4 * all.reduce((n, a) => n + a.length, 0);
  }
}

/**
 * Bytes the step's arrays take for `batch` samples of a schedule, inputs excepted (the step reads
 * them where they arrive): what StepArrays.fit allocates, counted without allocating.
 */
export function arrayBytes(s: Schedule, batch: number): number {
  let n = 0;
  s.slots.valueSizes.forEach((size, i) => {
    if (!s.slots.inputs.has(i)) n += size * batch;
  });
  for (const size of s.slots.gradSizes) n += size * batch;
  const temps: number[] = [];
  for (const o of s.ops) {
    n += o.op.saved(batch).reduce((a, b) => a + b, 0);
    o.op.temps(batch).forEach((t, j) => (temps[j] = Math.max(temps[j] ?? 0, t)));
  }
  n += temps.reduce((a, b) => a + b, 0);
  return 4 * n;
}
