import { allocate, type DType, type TensorData } from "../../protocol/tensor";

/** Buffers kept of one size: a step brings each of its tensors once, and two steps are in flight. */
const PER_SIZE = 4;
/** Sizes kept at once: a fit's batches come in two or three (the last batch of an epoch is shorter). */
const SIZES = 8;

/**
 * The memory of step batches the compute thread is done with, handed back to the
 * communication thread, which receives the next steps' attachments into it.
 *
 * Why: every step's batch arrived in new arrays, handed to the compute thread. They outlived
 * its young collections (the next step's batch arrives while one computes), and V8 let them
 * pile up in the old generation until its external-memory limit set off a full collection: a
 * 2-worker demo's workers held 13-18 MiB more than their estimate, and 17.5-20.6 MiB above
 * the idle worker (the estimate's 20.5) with a full collection forced after every step.
 *
 * A buffer given here is no one else's: the compute thread transferred it, so every view it
 * kept is detached (empty), and a buffer taken is given to one message only.
 */
export class RecycledArrays {
  private readonly bySize = new Map<number, ArrayBuffer[]>();

  /** An array of `length` elements, in a buffer given back if one of its size is kept; its contents are stale. */
  take(dtype: DType, length: number): TensorData {
    const kept = this.bySize.get(length * 4)?.pop();
    if (!kept) return allocate(dtype, length);
    return dtype === "float32" ? new Float32Array(kept) : new Int32Array(kept);
  }

  /** Buffers the compute thread is done with; those beyond what is kept are left to the collector. */
  give(buffers: readonly ArrayBuffer[]): void {
    for (const buf of buffers) {
      if (buf.byteLength === 0) continue;
      let list = this.bySize.get(buf.byteLength);
      if (!list) {
        if (this.bySize.size >= SIZES) this.bySize.delete(this.bySize.keys().next().value as number);
        list = [];
        this.bySize.set(buf.byteLength, list);
      }
      if (list.length < PER_SIZE) list.push(buf);
    }
  }

  /** What is kept, in bytes. */
  get bytes(): number {
    let sum = 0;
    for (const list of this.bySize.values()) for (const b of list) sum += b.byteLength;
    return sum;
  }
}

/** This communication thread's: its channels receive into it, the compute thread gives to it. */
export const recycledArrays = new RecycledArrays();
