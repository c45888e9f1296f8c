import { ProtocolError, TimeoutError } from "../errors/errors";
import { JoinMessageSchema, type JoinMessage } from "../protocol/join";
import { fromWireJson, toWireJson } from "../protocol/json";
import { PROTOCOL_VERSION } from "../protocol/version";
import type { Link } from "./link";

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
export function readJoinFrame(link: Link, o: { timeoutMs: number; who: string; waitingFor: string }): Promise<JoinMessage> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      done(() => reject(new TimeoutError(`${o.who} sent no ${o.waitingFor} within ${o.timeoutMs} ms`, { details: { address: link.address, waitingFor: `${o.waitingFor} from ${o.who}` } })));
    }, o.timeoutMs);
    const done = (fn: () => void): void => {
      clearTimeout(timer);
      link.setHandlers(null);
      fn();
    };
    link.setHandlers({
      text: (text) => done(() => {
        try {
          resolve(parseJoinFrame(text, o.who));
        } catch (err) {
          reject(err);
        }
      }),
      binary: () => done(() => reject(new ProtocolError(`${o.who} sent a binary frame during the join`))),
      close: (code, reason) => done(() => reject(new ProtocolError(`${o.who} closed the connection while this side waited for ${o.waitingFor} (code ${code}${reason ? `, ${reason}` : ""})`, { details: { address: link.address } }))),
      pong: () => undefined,
    });
  });
}

function parseJoinFrame(text: string, who: string): JoinMessage {
  if (text.length > MAX_JOIN_FRAME) throw new ProtocolError(`join frame of ${text.length} bytes from ${who} is too large`);
  let parsed: unknown;
  try {
    parsed = fromWireJson(text);
  } catch {
    throw new ProtocolError(`join frame from ${who} is not JSON`);
  }
  const r = JoinMessageSchema.safeParse(parsed);
  if (!r.success) throw new ProtocolError(`invalid join frame from ${who}: ${r.error.issues[0]?.path.join(".") ?? ""} ${r.error.issues[0]?.message ?? "?"}`);
  return r.data;
}
