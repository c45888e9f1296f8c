import { z } from "zod";
import { PROTOCOL_VERSION } from "./version";

/**
 * A browser tab cannot accept connections, so the driver listens for it: the tab registers at
 * the driver's join address (path /relay, after the usual handshake), and is told the address
 * others dial to reach it (/relay/<id>). For each connection dialled there, the driver tells the
 * tab (`incoming`), the tab dials /relay/<id>/<conn>, and the driver joins the two connections
 * frame for frame. The two ends then run the cluster's handshake end to end through it: the
 * relay forwards bytes it cannot forge, and learns nothing that proves the token.
 */
const v = z.literal(PROTOCOL_VERSION);
const id = z.string().regex(/^[A-Za-z0-9_-]{16,64}$/);

export const RelayListeningSchema = z.strictObject({ type: z.literal("listening"), v, url: z.string().max(300), id });
export const RelayIncomingSchema = z.strictObject({ type: z.literal("incoming"), v, conn: id });
export const RelayMessageSchema = z.discriminatedUnion("type", [RelayListeningSchema, RelayIncomingSchema]);
export type RelayMessage = z.infer<typeof RelayMessageSchema>;

/** The path parts: "/relay" to register, "/relay/<id>" to reach a tab, "/relay/<id>/<conn>" for the tab to take one. */
export function relayPath(
  path: string,
): { kind: "register" } | { kind: "reach"; id: string } | { kind: "take"; id: string; conn: string } | null {
  const m = /^\/relay(?:\/([A-Za-z0-9_-]{16,64}))?(?:\/([A-Za-z0-9_-]{16,64}))?\/?$/.exec(path);
  if (!m) return null;
  if (m[1] === undefined) return { kind: "register" };
  if (m[2] === undefined) return { kind: "reach", id: m[1] };
  return { kind: "take", id: m[1], conn: m[2] };
}
