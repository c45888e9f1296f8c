/**
 * Shared memory an all-reduce crosses between the compute thread and the communication thread
 * on the WebSocket plane, given to the communication thread once and then used step after step.
 *
 * Why: handed over as a message, the gradient's buffer arrives in the other thread as a new
 * ArrayBuffer, and V8 counts it there as new memory outside its heap, coming and going. On the
 * 11.4M MLP that is 45.6 MB each way a step: the compute thread ran a full collection about
 * every step (`--trace-gc`, 28 against the native plane's 9 over the same fit), and V8's
 * helper threads took 44 ms of CPU a step against 13 (four threads together). Copying the
 * gradient in and the sum out costs a few milliseconds.
 */
export class Exchange {
  private memory: Float32Array | null = null;

  constructor(private readonly share: (memory: SharedArrayBuffer) => void) {}

  /** Whether the threads can share memory here (a browser tab needs cross-origin isolation). */
  static available(): boolean {
    return (
      typeof SharedArrayBuffer !== "undefined" &&
      (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated !== false
    );
  }

  /** The first `length` values of the shared memory, grown (and given again) when too small. */
  view(length: number): Float32Array {
    if (!this.memory || this.memory.length < length) {
      this.memory = new Float32Array(new SharedArrayBuffer(4 * Math.max(length, 1)));
      this.share(this.memory.buffer as SharedArrayBuffer);
    }
    return this.memory.subarray(0, length);
  }
}
