import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * Challenge-response proof of the cluster token. Each side sends a fresh nonce; each proves it
 * knows the token by an HMAC over both nonces and its role. The token itself never crosses the wire.
 */
export type MacRole = "client" | "server";

export function newNonce(): string {
  return randomBytes(32).toString("hex");
}

export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

export function mac(token: string, role: MacRole, serverNonce: string, clientNonce: string): string {
  return createHmac("sha256", token).update(`meshtrain-v1|${role}|${serverNonce}|${clientNonce}`).digest("hex");
}

/** Constant-time comparison of two hex MACs. */
export function macEquals(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}
