import * as tf from "@tensorflow/tfjs";

/**
 * Physical bytes held by a TF.js backend: counted per data buffer as the backend creates and
 * frees them. tf.memory().numBytes counts a buffer again for every tensor sharing it (autograd
 * keeps shared clones), so it overstates what is really held; this does not.
 */
export interface MemoryTracker {
  readonly liveBytes: number;
  stop(): void;
}

type Backend = {
  write(values: unknown, shape: number[], dtype: string): object;
  move(id: object, values: unknown, shape: number[], dtype: string, refCount: number): void;
  disposeData(id: object, force?: boolean): boolean;
};

function byteLength(values: unknown): number {
  if (values && typeof values === "object" && "byteLength" in values) return (values as ArrayBufferView).byteLength;
  if (Array.isArray(values)) return values.length * 4;
  return 0;
}

export function trackBackendMemory(): MemoryTracker {
  const b = tf.backend() as unknown as Backend;
  const original = { write: b.write, move: b.move, disposeData: b.disposeData };
  const sizes = new Map<object, number>();
  let live = 0;
  const add = (id: object, values: unknown): void => {
    if (sizes.has(id)) return;
    const n = byteLength(values);
    sizes.set(id, n);
    live += n;
  };
  b.write = (values, shape, dtype) => {
    const id = original.write.call(b, values, shape, dtype);
    add(id, values);
    return id;
  };
  b.move = (id, values, shape, dtype, refCount) => {
    original.move.call(b, id, values, shape, dtype, refCount);
    add(id, values);
  };
  b.disposeData = (id, force) => {
    const freed = original.disposeData.call(b, id, force);
    if (freed !== false && sizes.has(id)) {
      live -= sizes.get(id)!;
      sizes.delete(id);
    }
    return freed;
  };
  return {
    get liveBytes() {
      return live;
    },
    stop() {
      Object.assign(b, original);
    },
  };
}
