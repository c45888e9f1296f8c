import { Buffer } from "buffer";
import { LaunchError, ProtocolError, TimeoutError } from "../errors/errors";
import { fromWireJson } from "../protocol/json";
import { RelayIncomingSchema, RelayListeningSchema } from "../protocol/relay";
import { offerHandshake } from "./handshake";
import { CLOSE, type Link } from "./link";
import { HEARTBEAT, SocketLink } from "./socket-link";
import { nextFrame } from "./next-frame";
import type { DialOptions, Listener, ListenOptions } from "./ws-endpoint";

/**
 * ws-endpoint.ts for a browser tab: Links over the browser's WebSocket. A tab cannot listen, so
 * listen() registers at the driver's relay and is handed each connection dialled to the
 * address the relay gives it (protocol/relay.ts).
 */

/** Sends are not held once the socket has this much queued: sendBinary waits for it to drain. */
const QUEUE_BYTES = 8 * 1024 * 1024;

class BrowserLink extends SocketLink implements Link {
  constructor(
    private readonly ws: WebSocket,
    address: string,
  ) {
    super(ws, address);
    ws.binaryType = "arraybuffer";
    ws.onmessage = (e: MessageEvent) => {
      if (typeof e.data === "string") this.deliverText(e.data);
      else {
        const buf = Buffer.from(e.data as ArrayBuffer);
        this.slot.emit((h) => h.binary(buf));
      }
    };
    ws.onclose = (e: CloseEvent) => this.closedBy(e.code, e.reason);
  }

  sendBinary(data: Buffer): Promise<void> {
    if (this.ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error(`link to ${this.address} is closed`));
    this.ws.send(data);
    return this.drained();
  }

  sendParts(head: Buffer, body: Uint8Array): Promise<void> {
    if (this.ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error(`link to ${this.address} is closed`));
    const frame = new Uint8Array(head.length + body.byteLength);
    frame.set(head, 0);
    frame.set(body, head.length);
    this.ws.send(frame);
    return this.drained();
  }

  /** The browser says nothing when bytes leave: resolved once its queue is short again. */
  private drained(): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (this.ws.readyState !== WebSocket.OPEN) reject(new Error(`link to ${this.address} closed while sending`));
        else if (this.ws.bufferedAmount <= QUEUE_BYTES) resolve();
        else setTimeout(check, 2);
      };
      check();
    });
  }

  ping(): void {
    this.sendText(HEARTBEAT.ping);
  }

  close(code: number = CLOSE.normal, reason = ""): void {
    // Browsers may close only with 1000 or a code of 3000-4999.
    const allowed = code === CLOSE.normal || (code >= 3000 && code <= 4999) ? code : CLOSE.normal;
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING)
      this.ws.close(allowed, reason.slice(0, 120));
  }

  terminate(): void {
    this.close(CLOSE.normal, "terminated");
  }
}

export function dial(url: string, options: DialOptions): Promise<Link> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const fail = (why: string): void => {
      clearTimeout(deadline);
      ws.onopen = ws.onerror = ws.onclose = null;
      ws.close();
      reject(
        new LaunchError(`cannot connect to ${url}: ${why}`, {
          details: { address: url },
          hint: "check that the driver is still running and reachable from this browser",
        }),
      );
    };
    const deadline = setTimeout(() => fail(`no answer within ${options.timeoutMs} ms`), options.timeoutMs);
    ws.onerror = () => fail("the browser could not open the WebSocket");
    ws.onclose = (e) => fail(`closed (code ${e.code})`);
    ws.onopen = () => {
      clearTimeout(deadline);
      ws.onopen = ws.onerror = ws.onclose = null;
      resolve(new BrowserLink(ws, url));
    };
  });
}

/** A relay frame from the driver, checked. */
function relayFrame<T>(
  text: string,
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } },
): T {
  let value: unknown;
  try {
    value = fromWireJson(text);
  } catch {
    throw new ProtocolError("the driver's relay sent a frame that is not JSON");
  }
  const r = schema.safeParse(value);
  if (!r.success) throw new ProtocolError("the driver's relay sent a malformed frame");
  return r.data;
}

/**
 * Listens through the driver's relay at host:port: proves the token there, learns the address
 * others dial to reach this tab, and for each connection dialled there dials back to take it.
 */
export async function listen(options: ListenOptions): Promise<Listener> {
  if (!options.token)
    throw new LaunchError("a browser tab listens through the driver's relay, which needs the cluster's token");
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  const base = `${self.location.protocol === "https:" ? "wss" : "ws"}://${host}:${options.port}`;
  const who = `the driver's relay at ${base}`;
  const reg = await dial(`${base}/relay`, { maxFrameBytes: options.maxFrameBytes, timeoutMs: 10_000 });
  await offerHandshake(reg, { token: options.token, timeoutMs: 10_000, role: "relay", who });
  const listening = await nextFrame(reg, {
    timeoutMs: 10_000,
    parse: (text) => relayFrame(text, RelayListeningSchema),
    onTimeout: () =>
      new TimeoutError(`${who} gave no address within 10 s`, { details: { waitingFor: `an address from ${who}` } }),
    onBinary: () => new ProtocolError(`${who} sent a binary frame`),
    onClose: (code, reason) =>
      new ProtocolError(`${who} closed the registration (code ${code}${reason ? `, ${reason}` : ""})`),
  });
  const take = (conn: string): void => {
    dial(`${base}/relay/${listening.id}/${conn}`, { maxFrameBytes: options.maxFrameBytes, timeoutMs: 10_000 }).then(
      (link) => options.onLink(link, "/"),
      () => undefined,
    );
  };
  reg.setHandlers({
    text: (text) => {
      try {
        take(relayFrame(text, RelayIncomingSchema).conn);
      } catch {
        reg.close(CLOSE.protocolError, "malformed relay frame");
      }
    },
    binary: () => reg.close(CLOSE.protocolError, "binary frame on the relay's registration"),
    pong: () => undefined,
    close: () => undefined,
  });
  return {
    port: options.port,
    url: listening.url,
    close: () => Promise.resolve(reg.close(CLOSE.normal, "tab closed")),
  };
}
