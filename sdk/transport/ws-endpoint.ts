import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import * as tls from "node:tls";
import { WebSocket, WebSocketServer, type RawData } from "ws";
import { LaunchError } from "../errors/errors";
import { CLOSE, type Link } from "./link";
import { SocketLink } from "./socket-link";
import { writeRawFrame } from "./ws-raw-frame";
import { readFramesRaw } from "./ws-raw-read";

/**
 * With ws-raw-frame.ts (frames written under ws), the only file that touches sockets. It turns
 * WebSockets into Links; authentication, message validation and everything else happen above, on Links.
 */

/** Our own peers never need masking (it guards browsers against proxy cache poisoning). */
const ZERO_MASK = (mask: Buffer): void => {
  mask.fill(0);
};

/** Sockets whose frames a relay hands on as they are. */
const relayed = new WeakSet<WebSocket>();

class WsLink extends SocketLink implements Link {
  /** Binary frames asked for borrowed (lendBinary); `lending` once they are. */
  private lendAsked = false;
  private lending = false;

  /** `masked`: this end dialed, and a client's frames carry a (zero) mask. */
  constructor(
    readonly ws: WebSocket,
    address: string,
    private readonly masked: boolean,
    private readonly maxFrameBytes: number,
  ) {
    super(ws, address);
    ws.on("message", (data: RawData, isBinary: boolean) => {
      const buf = toBuffer(data);
      if (isBinary) this.slot.emit((h) => h.binary(buf));
      // A relay hands a browser's heartbeat on to the far end, which answers it.
      else if (relayed.has(ws)) this.slot.emit((h) => h.text(buf.toString("utf8")));
      else this.deliverText(buf.toString("utf8"));
      this.lendLater();
    });
    ws.on("pong", () => {
      this.slot.emit((h) => h.pong());
      this.lendLater();
    });
    ws.on("ping", () => this.lendLater());
    ws.on("close", (code: number, reason: Buffer) => {
      if (!this.closeSeen) this.closedBy(code, reason.toString("utf8"));
    });
    // Errors are always followed by "close"; the close handler reports them.
    ws.on("error", () => undefined);
  }

  sendBinary(data: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.ws.readyState !== WebSocket.OPEN) {
        reject(new Error(`link to ${this.address} is closed`));
        return;
      }
      this.ws.send(data, { binary: true }, (err) => (err ? reject(err) : resolve()));
    });
  }

  sendParts(head: Buffer, body: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.ws.readyState !== WebSocket.OPEN) {
        reject(new Error(`link to ${this.address} is closed`));
        return;
      }
      writeRawFrame(this.ws, this.masked, head, body, (err) => (err ? reject(err) : resolve()));
    });
  }

  ping(): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.ping();
  }

  lendBinary(): boolean {
    this.lendAsked = true;
    if (!this.lending && this.ws.readyState === WebSocket.OPEN) {
      const how = readFramesRaw(
        this.ws,
        this.maxFrameBytes,
        (payload) => this.slot.emitBorrowed(payload),
        (why, code) => {
          // The close frame first: the owner, told of the close, closes the link itself (normally, 1000),
          // and the peer would hear that code instead of why its frame was refused.
          this.close(code, why);
          if (!this.closeSeen) this.closedBy(code, `${this.address} sent ${why}`);
        },
      );
      this.lending = how === "lent";
      // A link that never can (TLS) goes on as before, without trying at every frame.
      if (how === "never") this.lendAsked = false;
    }
    return this.lending;
  }

  /** ws had a frame half read when lending was asked for: it is tried again once ws's event is over. */
  private lendLater(): void {
    if (this.lendAsked && !this.lending) queueMicrotask(() => void this.lendBinary());
  }

  close(code: number = CLOSE.normal, reason = ""): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) {
      this.ws.close(code, reason.slice(0, 120));
      // A peer that never answers the closing handshake must not keep the socket open.
      setTimeout(() => this.ws.terminate(), 2000).unref();
    }
  }

  terminate(): void {
    this.ws.terminate();
  }
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

export interface ListenOptions {
  host: string;
  /** Plain HTTP requests (not WebSocket upgrades); without it they get 426. */
  onRequest?(req: http.IncomingMessage, res: http.ServerResponse): void;
  /** The cluster's token: a browser tab listens through the driver's relay and proves it there (ws-endpoint.browser.ts). */
  token?: string;
  /** Pings are not answered here but handed on (the join listener's relayed connections); see relayLinks. */
  relayPings?: boolean;
  /** 0 picks a free port. */
  port: number;
  maxFrameBytes: number;
  maxConnections: number;
  tls?: { cert: Buffer; key: Buffer };
  /** false: neither the listening socket nor its connections keep this process running (a driver's). Default true. */
  keepProcessAlive?: boolean;
  /** `path`: the request's path ("/", "/relay/..."), query dropped. */
  onLink(link: Link, path: string): void;
}

export interface Listener {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

export function listen(options: ListenOptions): Promise<Listener> {
  const server = options.tls
    ? https.createServer({ cert: options.tls.cert, key: options.tls.key })
    : http.createServer();
  server.maxConnections = options.maxConnections;
  const wss = new WebSocketServer({
    server,
    maxPayload: options.maxFrameBytes,
    perMessageDeflate: false,
    clientTracking: true,
    autoPong: options.relayPings !== true,
  });
  if (options.onRequest) server.on("request", options.onRequest);
  wss.on("connection", (ws, req) => {
    if (options.keepProcessAlive === false) req.socket.unref();
    const address = `${req.socket.remoteAddress ?? "?"}:${req.socket.remotePort ?? "?"}`;
    // Answered here until relayLinks hands them on.
    if (options.relayPings === true) ws.on("ping", (data) => (relayed.has(ws) ? undefined : ws.pong(data)));
    options.onLink(new WsLink(ws, address, false, options.maxFrameBytes), new URL(req.url ?? "/", "http://x").pathname);
  });
  wss.on("error", () => undefined);
  return new Promise((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      reject(
        new LaunchError(`cannot listen on ${options.host}:${options.port}: ${err.code ?? err.message}`, {
          hint:
            err.code === "EADDRINUSE" ? "choose another --port, or stop what uses this one" : "check --host and --port",
        }),
      );
    });
    if (options.keepProcessAlive === false) server.unref();
    server.listen(options.port, options.host, () => {
      const addr = server.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : options.port;
      const scheme = options.tls ? "wss" : "ws";
      const host = options.host.includes(":") ? `[${options.host}]` : options.host;
      resolve({
        port,
        url: `${scheme}://${host}:${port}`,
        close: () =>
          new Promise<void>((done) => {
            for (const client of wss.clients) client.terminate();
            wss.close(() => server.close(() => done()));
          }),
      });
    });
  });
}

export interface DialOptions {
  maxFrameBytes: number;
  timeoutMs: number;
  /** PEM certificate(s) to trust for wss:// beyond the system's. */
  ca?: Buffer;
  /** false: the open connection alone does not keep this process running. Default true. */
  keepProcessAlive?: boolean;
}

export function dial(url: string, options: DialOptions): Promise<Link> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {
      maxPayload: options.maxFrameBytes,
      perMessageDeflate: false,
      handshakeTimeout: options.timeoutMs,
      generateMask: ZERO_MASK,
      ...(options.ca ? { ca: options.ca } : {}),
      // A driver's connections never keep its process alive on their own: a script that ends
      // without close() exits, and its local workers exit with it. Pending requests keep
      // their own timers, so the process stays alive while it waits for an answer.
      ...(options.keepProcessAlive === false
        ? {
            createConnection: (o: object): net.Socket => {
              const socket = url.startsWith("wss:")
                ? tls.connect(o as tls.ConnectionOptions)
                : net.connect(o as net.NetConnectOpts);
              socket.unref();
              return socket;
            },
          }
        : {}),
    });
    // Our own deadline (a timer that keeps the process alive while connecting, which the
    // unreferenced socket does not).
    const deadline = setTimeout(() => fail(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    const fail = (err: Error): void => {
      clearTimeout(deadline);
      ws.removeAllListeners();
      ws.on("error", () => undefined);
      ws.terminate();
      const untrusted = /certificate|self[- ]signed|CERT_|altnames/i.test(err.message);
      reject(
        new LaunchError(`cannot connect to ${url}: ${err.message}`, {
          details: { address: url },
          hint: untrusted
            ? 'the worker\'s TLS certificate is not trusted here (or does not name this address): pass its certificate with .tls({ ca: fs.readFileSync("cert.pem") })'
            : "check that the worker is running (meshtrain worker --port ...) and reachable from here",
        }),
      );
    };
    ws.once("error", fail);
    ws.once("open", () => {
      clearTimeout(deadline);
      ws.removeListener("error", fail);
      resolve(new WsLink(ws, url, true, options.maxFrameBytes));
    });
  });
}

/**
 * Joins two connections accepted here frame for frame (a tab's relay: its end and the end that
 * dialled it), pings and pongs included, so each end's heartbeat measures the other end, not
 * this process. Either closing closes the other. Frames arrive held since the links were
 * accepted are forwarded first.
 */
export function relayLinks(a: Link, b: Link): void {
  if (!(a instanceof WsLink) || !(b instanceof WsLink))
    throw new Error("relayLinks joins WebSocket links accepted by listen()");
  const forward = (from: WsLink, to: WsLink): void => {
    relayed.add(from.ws);
    from.ws.on("ping", (d) => to.ws.readyState === WebSocket.OPEN && to.ws.ping(d));
    from.ws.on("pong", (d) => to.ws.readyState === WebSocket.OPEN && to.ws.pong(d));
    from.setHandlers({
      text: (t) => to.sendText(t),
      binary: (d) => void to.sendBinary(d).catch(() => undefined),
      pong: () => undefined,
      close: (code, reason) => to.close(code >= 4000 || code === CLOSE.normal ? code : CLOSE.goingAway, reason),
    });
  };
  forward(a, b);
  forward(b, a);
}
