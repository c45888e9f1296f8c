import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import type { Tensorlike } from "../protocol/tensor";

/** weights-digest.ts for a browser tab: the same SHA-256, computed in JavaScript (WebCrypto's is asynchronous). */
export function weightsDigest(weights: readonly Tensorlike[]): string {
  const h = sha256.create();
  for (const w of weights) h.update(new Uint8Array(w.data.buffer, w.data.byteOffset, w.data.byteLength));
  return bytesToHex(h.digest());
}
