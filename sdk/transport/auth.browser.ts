import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import type { MacRole } from "./auth";

/**
 * auth.ts for a browser tab: the same challenge-response, with the browser's random source and
 * an HMAC that runs synchronously (WebCrypto's is asynchronous, and the handshake is not).
 */
function randomHex(bytes: number): string {
  return bytesToHex(crypto.getRandomValues(new Uint8Array(bytes)));
}

export function newNonce(): string {
  return randomHex(32);
}

export function newToken(): string {
  throw new Error("a browser tab joins with the driver's token; it never makes one");
}

export function mac(token: string, role: MacRole, serverNonce: string, clientNonce: string): string {
  return bytesToHex(
    hmac(
      sha256,
      new TextEncoder().encode(token),
      new TextEncoder().encode(`meshtrain-v1|${role}|${serverNonce}|${clientNonce}`),
    ),
  );
}

/** Constant-time comparison of two hex MACs. */
export function macEquals(a: string, b: string): boolean {
  if (!/^[0-9a-f]+$/i.test(a) || !/^[0-9a-f]+$/i.test(b) || a.length % 2 !== 0 || b.length % 2 !== 0) return false;
  const x = hexToBytes(a);
  const y = hexToBytes(b);
  if (x.length !== y.length || x.length === 0) return false;
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}
