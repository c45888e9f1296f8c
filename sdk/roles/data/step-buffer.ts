/**
 * The buffer a replica's last step's sum came back in, for the next step: a fresh megabyte each
 * step made V8 count it as external memory and run a full collection every few dozen steps,
 * which cost a small model's step a third of its time.
 */
export class StepBuffer {
  private spare: Float32Array | null = null;

  /** A zeroed buffer of `length` floats: the last step's, when it fits. */
  take(length: number): Float32Array {
    const b = this.spare;
    this.spare = null;
    if (!b || b.length !== length) return new Float32Array(length);
    b.fill(0);
    return b;
  }

  /** The buffer a step ended with (the sum's, or a sharded step's all-gather's), ours again. */
  give(b: Float32Array): void {
    this.spare = b;
  }
}
