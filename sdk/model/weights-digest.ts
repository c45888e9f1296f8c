import { createHash } from "node:crypto";
import type { Tensorlike } from "../protocol/tensor";

/** SHA-256 over every weight's bytes in order; equal digests mean identical replicas. */
export function weightsDigest(weights: readonly Tensorlike[]): string {
  const h = createHash("sha256");
  for (const w of weights) h.update(new Uint8Array(w.data.buffer, w.data.byteOffset, w.data.byteLength));
  return h.digest("hex");
}
