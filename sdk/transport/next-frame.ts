import { ProtocolError } from "../errors/errors";
import { fromWireJson } from "../protocol/json";
import type { Link } from "./link";

/**
 * The one text frame a short exchange waits for before a Channel owns the link (the handshake,
 * the join): parsed by `parse`; a timeout, a binary frame or a close rejects with the error the
 * caller makes. The link's handlers are released either way, holding what comes next.
 */
export function nextFrame<T>(
  link: Link,
  o: {
    timeoutMs: number;
    parse(text: string): T;
    onTimeout(): Error;
    onBinary(): Error;
    onClose(code: number, reason: string): Error;
  },
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(() => reject(o.onTimeout())), o.timeoutMs);
    const done = (fn: () => void): void => {
      clearTimeout(timer);
      link.setHandlers(null);
      fn();
    };
    link.setHandlers({
      text: (text) =>
        done(() => {
          try {
            resolve(o.parse(text));
          } catch (err) {
            reject(err);
          }
        }),
      binary: () => done(() => reject(o.onBinary())),
      close: (code, reason) => done(() => reject(o.onClose(code, reason))),
      pong: () => undefined,
    });
  });
}

/** A small JSON frame: refused when larger than `maxChars` or not JSON, naming `what` and `who`. */
export function parseSmallJson(text: string, maxChars: number, what: string, who: string): unknown {
  if (text.length > maxChars) throw new ProtocolError(`${what} frame of ${text.length} bytes from ${who} is too large`);
  try {
    return fromWireJson(text);
  } catch {
    throw new ProtocolError(`${what} frame from ${who} is not JSON`);
  }
}
