/**
 * Recycles the Float32Arrays that hold kernel outputs. A fresh large typed array costs page
 * faults and zeroing; most tensors of a training step have the same sizes every step.
 *
 * An array goes back to the pool only when no tensor references its memory any more (slices can
 * share it) and no one was handed it directly (dataSync() returns the backing array itself).
 */
/** Below this many elements an array is not pooled. */
const SMALL = 4096;

export class ArrayPool {
  private readonly free = new Map<number, Float32Array[]>();
  /** Live tensors referencing each pooled buffer. */
  private readonly users = new WeakMap<ArrayBufferLike, number>();
  private readonly owner = new WeakMap<ArrayBufferLike, Float32Array>();
  private readonly escaped = new WeakSet<ArrayBufferLike>();
  private freeBytes = 0;

  constructor(
    private readonly maxFreeBytes = 512 * 1024 * 1024,
    private readonly perSize = 256,
  ) {}

  alloc(length: number): Float32Array {
    // Small arrays are cheapest straight from V8's heap; only large ones are worth recycling.
    if (length < SMALL) return new Float32Array(length);
    const list = this.free.get(length);
    const reused = list?.pop();
    if (reused) {
      this.freeBytes -= reused.byteLength;
      this.owner.set(reused.buffer, reused);
      return reused;
    }
    // Kernels overwrite every element of their outputs, so the memory need not be zeroed.
    const bytes = Buffer.allocUnsafeSlow(length * 4);
    const fresh = new Float32Array(bytes.buffer, bytes.byteOffset, length);
    this.owner.set(fresh.buffer, fresh);
    return fresh;
  }

  /** A tensor now references `values`. */
  retain(values: unknown): void {
    const buf = bufferOf(values);
    if (buf && this.owner.has(buf)) this.users.set(buf, (this.users.get(buf) ?? 0) + 1);
  }

  /** `values` was handed out (dataSync): its memory must never be reused. */
  escape(values: unknown): void {
    const buf = bufferOf(values);
    if (buf) this.escaped.add(buf);
  }

  /** A tensor referencing `values` was deleted. */
  release(values: unknown): void {
    const buf = bufferOf(values);
    if (!buf || !this.owner.has(buf)) return;
    const n = (this.users.get(buf) ?? 1) - 1;
    if (n > 0) {
      this.users.set(buf, n);
      return;
    }
    this.users.delete(buf);
    const array = this.owner.get(buf)!;
    this.owner.delete(buf);
    if (this.escaped.has(buf) || this.freeBytes + array.byteLength > this.maxFreeBytes) return;
    const list = this.free.get(array.length) ?? [];
    if (list.length >= this.perSize) return;
    list.push(array);
    this.free.set(array.length, list);
    this.freeBytes += array.byteLength;
  }

  /** Forgets every free array, so that memory can go back to the system (between fits). */
  drain(): void {
    this.free.clear();
    this.freeBytes = 0;
  }

  get pooledBytes(): number {
    return this.freeBytes;
  }
}

/** The memory behind a pooled-size array; undefined for anything the pool never owns. */
function bufferOf(values: unknown): ArrayBufferLike | undefined {
  return values instanceof Float32Array && values.buffer.byteLength >= SMALL * 4 ? values.buffer : undefined;
}
