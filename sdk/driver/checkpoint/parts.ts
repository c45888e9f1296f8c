import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { CheckpointError } from "../../errors/errors";
import { copyOverlap, rangesLength, type FlatRanges } from "../../model/flat-state";
import { z } from "zod";

/**
 * The parts of a sharded checkpoint on disk: each replica's slots over its ranges of the flat
 * parameters, slot after slot. They are checked by streaming (a part is never read whole) and
 * read back range by range, so the driver holds only what the replica it feeds needs.
 */

const Range = z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]);

export const ShardsSchema = z.strictObject({
  format: z.enum(["native", "tfjs"]),
  /** Values per parameter (Adam 2, momentum 1, SGD 0): each part holds slot 0 over its ranges, then slot 1, ... */
  slots: z.number().int().nonnegative(),
  head: z.array(z.strictObject({ name: z.string(), value: z.number() })),
  scalars: z.record(z.string(), z.number()),
  parts: z.array(
    z.strictObject({ file: z.string().regex(/^optimizer-\d+\.bin$/), ranges: z.array(Range), sha256: z.string() }),
  ),
});
export type Shards = z.infer<typeof ShardsSchema>;

const CHUNK = 8 << 20;

function opened(file: string): number {
  try {
    return fs.openSync(file, "r");
  } catch (err) {
    throw new CheckpointError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, {
      details: { file },
    });
  }
}

/** Checks every part's size and SHA-256 against the manifest, and that together they cover each parameter once. */
export function checkParts(dir: string, shards: Shards): void {
  for (const part of shards.parts) {
    const file = path.join(dir, part.file);
    const fd = opened(file);
    try {
      const want = shards.slots * rangesLength(part.ranges) * 4;
      const size = fs.fstatSync(fd).size;
      if (size !== want)
        throw new CheckpointError(`${file} has ${size} bytes; its checkpoint describes ${want}`, { details: { file } });
      const hash = createHash("sha256");
      const buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(1, size)));
      for (let at = 0; at < size;) {
        const n = fs.readSync(fd, buf, 0, Math.min(buf.length, size - at), at);
        hash.update(buf.subarray(0, n));
        at += n;
      }
      if (hash.digest("hex") !== part.sha256)
        throw new CheckpointError(`${file} is corrupt: its SHA-256 differs from the one recorded when it was written`, {
          details: { file },
        });
    } finally {
      fs.closeSync(fd);
    }
  }
  const covered = shards.parts.flatMap((p) => p.ranges).sort((a, b) => a[0] - b[0]);
  let next = 0;
  for (const [from, to] of covered) {
    if (from !== next) break;
    next = to;
  }
  if (next !== Math.max(0, ...covered.map(([, to]) => to)) || covered.some(([from, to]) => to < from)) {
    throw new CheckpointError(`the parts of the checkpoint in ${dir} do not cover the model's parameters once each`, {
      details: { file: path.join(dir, "meta.json") },
    });
  }
}

/** Each slot's values over `want` (ranges of the flat parameters), read from the parts that hold them. */
export function readRanges(dir: string, shards: Shards, want: FlatRanges): Float32Array[] {
  const length = rangesLength(want);
  const slots = Array.from({ length: shards.slots }, () => new Float32Array(length));
  for (const part of shards.parts) {
    const held = rangesLength(part.ranges);
    const fd = opened(path.join(dir, part.file));
    try {
      let start = 0;
      for (const [from, to] of part.ranges) {
        const overlap = want.flatMap(([f, t]): FlatRanges =>
          Math.min(t, to) > Math.max(f, from) ? [[Math.max(f, from), Math.min(t, to)]] : [],
        );
        for (const [f, t] of overlap) {
          slots.forEach((slot, j) => {
            const values = new Float32Array(t - f);
            fs.readSync(fd, new Uint8Array(values.buffer), 0, values.byteLength, (j * held + start + f - from) * 4);
            copyOverlap(values, [[f, t]], slot, want);
          });
        }
        start += to - from;
      }
    } finally {
      fs.closeSync(fd);
    }
  }
  return slots;
}
