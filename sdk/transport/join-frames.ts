import { ProtocolError, TimeoutError } from "../errors/errors";
import { JoinMessageSchema, type JoinMessage } from "../protocol/join";
import { toWireJson } from "../protocol/json";
import { PROTOCOL_VERSION } from "../protocol/version";
import type { Link } from "./link";
import { nextFrame, parseSmallJson } from "./next-frame";

/** Join frames are small: a hello, a rank, an error. */
const MAX_JOIN_FRAME = 64 * 1024;

/** A join message without its version field (distributes over the union). */
type Unversioned<T> = T extends unknown ? Omit<T, "v"> : never;

export function sendJoinFrame(link: Link, msg: Unversioned<JoinMessage>): void {
  if (!link.closed) link.sendText(toWireJson({ ...msg, v: PROTOCOL_VERSION }));
}

/**
 * The next frame of the join exchange, checked. Rejects with a TimeoutError naming `waitingFor`
 * and `who`, a ProtocolError for anything malformed, or when the link closes first.
 */
export function readJoinFrame(
  link: Link,
  o: { timeoutMs: number; who: string; waitingFor: string },
): Promise<JoinMessage> {
  return nextFrame(link, {
    timeoutMs: o.timeoutMs,
    parse: (text) => {
      const r = JoinMessageSchema.safeParse(parseSmallJson(text, MAX_JOIN_FRAME, "join", o.who));
      if (!r.success)
        throw new ProtocolError(
          `invalid join frame from ${o.who}: ${r.error.issues[0]?.path.join(".") ?? ""} ${r.error.issues[0]?.message ?? "?"}`,
        );
      return r.data;
    },
    onTimeout: () =>
      new TimeoutError(`${o.who} sent no ${o.waitingFor} within ${o.timeoutMs} ms`, {
        details: { address: link.address, waitingFor: `${o.waitingFor} from ${o.who}` },
      }),
    onBinary: () => new ProtocolError(`${o.who} sent a binary frame during the join`),
    onClose: (code, reason) =>
      new ProtocolError(
        `${o.who} closed the connection while this side waited for ${o.waitingFor} (code ${code}${reason ? `, ${reason}` : ""})`,
        { details: { address: link.address } },
      ),
  });
}
