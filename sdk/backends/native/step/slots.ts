import type { Schedule, Slots } from "./schedule";

export function planSlots(s: Schedule): Slots {
  const value = valueSlots(s);
  const valueSizes: number[] = [];
  value.forEach((v, st) => (valueSizes[v] = Math.max(valueSizes[v] ?? 0, s.sizes[st]!)));
  const { grad, gradSizes } = gradSlots(s);
  return { value, grad, valueSizes, gradSizes, inputs: new Set(s.inputs.map((i) => value[i]!)) };
}

function valueSlots(s: Schedule): number[] {
  const readers = new Array<number>(s.sizes.length).fill(0);
  for (const o of s.ops) for (const i of o.inputs) readers[i]!++;
  for (const o of s.ops) if (o.mask !== null) readers[o.mask]!++;
  const producer = new Map<number, number>();
  s.ops.forEach((o, k) => o.outputs.forEach((out) => producer.set(out, k)));
  const pinned = new Set([...s.inputs, ...s.outputs]);
  const value = s.sizes.map((_, i) => i);
  for (const o of s.ops) {
    if (!o.op.inPlace || o.inputs.length !== 1 || o.outputs.length !== 1) continue;
    const src = o.inputs[0]!;
    const p = producer.get(src);
    if (
      p === undefined ||
      pinned.has(src) ||
      pinned.has(o.outputs[0]!) ||
      readers[src] !== 1 ||
      !s.ops[p]!.op.outputUnused
    )
      continue;
    if (s.sizes[src] !== s.sizes[o.outputs[0]!]) continue;
    value[o.outputs[0]!] = value[src]!;
  }
  return value;
}

/** Gradients to arrays by their lives in the backward pass (time t runs op n-1-t), best fit by size. */
function gradSlots(s: Schedule): { grad: number[]; gradSizes: number[] } {
  const n = s.ops.length;
  const start = new Map<number, number>();
  const end = new Map<number, number>();
  const open = (st: number, t: number): void => {
    if (s.grads[st] && !start.has(st)) start.set(st, t);
  };
  for (const out of s.outputs) open(out, -1);
  for (let t = 0; t < n; t++) {
    const o = s.ops[n - 1 - t]!;
    if (!o.backward) continue;
    for (const z of o.zeroFirst) open(z, t);
    o.inputs.forEach((i, j) => {
      if (o.needDx[j]) open(i, t);
    });
    for (const out of o.outputs) if (s.grads[out]) end.set(out, t);
  }
  const grad = new Array<number>(s.sizes.length).fill(-1);
  const gradSizes: number[] = [];
  const free: number[] = [];
  const byStart = new Map<number, number[]>();
  const byEnd = new Map<number, number[]>();
  for (const [st, t] of start) byStart.set(t, [...(byStart.get(t) ?? []), st]);
  for (const [st, t] of end) byEnd.set(t, [...(byEnd.get(t) ?? []), st]);
  for (let t = -1; t < n; t++) {
    // Those written at t get arrays before those read last at t give theirs back: an op's dx never shares its dy's.
    for (const st of byStart.get(t) ?? []) grad[st] = take(free, gradSizes, s.sizes[st]!);
    for (const st of byEnd.get(t) ?? []) if (grad[st]! >= 0) free.push(grad[st]!);
  }
  return { grad, gradSizes };
}

/** The free array closest above `size` (else the largest, grown), or a new one. */
function take(free: number[], sizes: number[], size: number): number {
  let best = -1;
  for (const [k, slot] of free.entries()) {
    const fits = sizes[slot]! >= size;
    const current = best < 0 ? null : sizes[free[best]!]!;
    if (
      current === null ||
      (fits && (current < size || sizes[slot]! < current)) ||
      (!fits && current < size && sizes[slot]! > current)
    )
      best = k;
  }
  if (best < 0) return sizes.push(size) - 1;
  const slot = free.splice(best, 1)[0]!;
  sizes[slot] = Math.max(sizes[slot]!, size);
  return slot;
}
