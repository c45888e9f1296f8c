import { PROTOCOL_VERSION } from "../../protocol/version";
import { CollectiveError, ProtocolError, type MeshtrainError } from "../../errors/errors";
import { fromWireError, toWireError } from "../../protocol/wire-error";
import { acceptHandshake, type AuthMessage } from "../../transport/handshake";
import { HandshakeLimiter } from "../../transport/handshake-limiter";
import { CLOSE, type Link } from "../../transport/link";
import { listen } from "../../transport/ws-endpoint";
import type { ComputeToComm } from "../bridge";
import { recycledArrays } from "./recycled-arrays";
import { Session, type SessionHost } from "./session";
import { config, log, toCompute } from "./thread";
import { collectGarbage } from "../collect-garbage";

/** Failed handshakes allowed per remote host before it is refused for a while. */
const LIMITS = { maxFailures: 5, windowMs: 60_000, banMs: 60_000 };

/** The shared memory all-reduces cross (worker/exchange.ts), once the compute thread gave it: a SharedArrayBuffer's, so typed as any Float32Array. */
let exchange: Float32Array = new Float32Array(0);

/**
 * The worker's listening socket: authenticates every connection, serves one driver session at
 * a time, hands peers to the session that expects them, and routes the compute thread's replies.
 */
export class CommServer implements SessionHost {
  private session: Session | null = null;
  private readonly limiter = new HandshakeLimiter(LIMITS);
  private readonly earlyPeers = new Map<string, { link: Link; timer: NodeJS.Timeout }>();

  async start(): Promise<void> {
    const listener = await listen({
      host: config.host,
      port: config.port,
      maxFrameBytes: config.maxFrameBytes,
      maxConnections: config.maxConnections,
      token: config.token,
      ...(config.tls ? { tls: { cert: Buffer.from(config.tls.cert), key: Buffer.from(config.tls.key) } } : {}),
      onLink: (link) => this.accept(link),
    });
    toCompute({ kind: "listening", url: listener.url, port: listener.port });
  }

  private accept(link: Link): void {
    const host = HandshakeLimiter.host(link.address);
    if (!this.limiter.allowed(host)) {
      link.close(CLOSE.policy, "too many failed handshakes; try again later");
      return;
    }
    acceptHandshake(link, {
      token: config.token,
      timeoutMs: config.handshakeTimeoutMs,
      server: { version: config.version, pid: process.pid },
    }).then(
      (auth) => {
        this.limiter.succeeded(host);
        if (auth.role === "driver") this.onDriver(link);
        else if (auth.role === "peer") this.onPeer(link, auth);
        else link.close(CLOSE.protocolError, "a worker joins a driver's join address, not another worker");
      },
      (err: MeshtrainError) => {
        log(`refused a connection from ${link.address}: ${err.summary}`);
        if (this.limiter.failed(host))
          log(
            `refusing every connection from ${host} for ${LIMITS.banMs / 1000} s: ${LIMITS.maxFailures} failed handshakes within ${LIMITS.windowMs / 1000} s`,
          );
      },
    );
  }

  private onDriver(link: Link): void {
    // A driver that closed its cluster a moment ago: its session is over even if the close is still in flight.
    if (this.session && !this.session.ended && this.session.channel.link.closed)
      this.session.end("the driver closed its connection");
    if (this.session && !this.session.ended) {
      link.sendText(
        JSON.stringify({
          type: "error",
          v: PROTOCOL_VERSION,
          error: toWireError(
            new ProtocolError("this worker is serving another driver", {
              hint: "wait for that driver to close its cluster, or start another worker",
            }),
          ),
        }),
      );
      link.close(CLOSE.busy, "serving another driver");
      return;
    }
    this.session = new Session(this, link);
  }

  private onPeer(link: Link, auth: AuthMessage): void {
    const peer = auth.peer;
    const s = this.session;
    if (!peer || !s || s.ended || s.id !== peer.session) {
      link.close(CLOSE.policy, "not a peer of this worker's session");
      return;
    }
    if (peer.link === "ps") {
      s.ps.addClient(peer.rank, link);
      return;
    }
    if (s.offerPeer(peer.rank, peer.link, link)) return;
    // It connected before this worker was configured; keep it until configure claims it.
    const key = `${peer.session}/${peer.rank}/${peer.link}`;
    this.earlyPeers.get(key)?.link.close(CLOSE.policy, "replaced");
    const timer = setTimeout(() => {
      this.earlyPeers.delete(key);
      link.close(CLOSE.policy, "never claimed by configure");
    }, 60_000);
    timer.unref();
    this.earlyPeers.set(key, { link, timer });
  }

  takeEarlyPeer(session: string, rank: number, kind: "ring" | "pipe"): Link | undefined {
    const key = `${session}/${rank}/${kind}`;
    const e = this.earlyPeers.get(key);
    if (!e) return undefined;
    clearTimeout(e.timer);
    this.earlyPeers.delete(key);
    return e.link;
  }

  handle(m: ComputeToComm): void {
    const s = this.session;
    switch (m.kind) {
      case "reply": {
        const ch = m.via === undefined ? s?.channel : s?.ps.client(m.via);
        if (!s || s.ended || !ch || ch.closed) return;
        if (m.via !== undefined && m.draft.type === "pulled") s.ps.sendPulled(ch, m.draft, m.attachments);
        else void ch.send(m.draft, m.attachments);
        return;
      }
      case "replyError": {
        const ch = m.via === undefined ? s?.channel : s?.ps.client(m.via);
        if (s && !s.ended && ch && !ch.closed) ch.replyError(m.re, fromWireError(m.error));
        return;
      }
      case "psPull":
        if (s && !s.ended) s.ps.psPull(m.seq, m.minVersion);
        else toCompute({ kind: "psFailed", seq: m.seq, error: toWireError(new CollectiveError("no driver session")) });
        return;
      case "psPush":
        if (s && !s.ended) s.ps.psPush(m.seq, m.clock, m.pulled, m.shards, m.wires, m.learningRate, m.standIn);
        else toCompute({ kind: "psFailed", seq: m.seq, error: toWireError(new CollectiveError("no driver session")) });
        return;
      case "exchange":
        exchange = new Float32Array(m.memory);
        return;
      case "allReduce":
        return this.allReduce(m);
      case "pipeSend":
        if (s && !s.ended) s.pipeSend(m.to, m.frameKind, m.step, m.micro, m.data);
        return;
      case "activity":
        s?.progress.set(m.text, m.state);
        return;
      case "holding":
        s?.holdsModel(m.model);
        return;
      case "output":
        if (s && !s.ended) s.output.add(m.stream, m.lines);
        return;
      case "flushOutput":
        if (s && !s.ended) void s.endBeforeExit(800).then(() => toCompute({ kind: "outputFlushed" }));
        else toCompute({ kind: "outputFlushed" });
        return;
      case "collectGarbage":
        void collectGarbage().then(() => toCompute({ kind: "garbageCollected" }));
        return;
      case "recycle":
        recycledArrays.give(m.buffers);
        return;
    }
  }

  /** The compute thread's all-reduce, its values given or in the shared exchange; refused when neither can serve it. */
  private allReduce(m: Extract<ComputeToComm, { kind: "allReduce" }>): void {
    const s = this.session;
    // The exchange is given before the first all-reduce that needs it, on this same channel.
    if (!m.data && exchange.length < (m.exchange ?? 0))
      toCompute({
        kind: "allReduceFailed",
        seq: m.seq,
        error: toWireError(
          new ProtocolError(`all-reduce ${m.seq} of ${m.exchange} values in shared memory of ${exchange.length}`),
        ),
      });
    else if (s && !s.ended)
      s.allReduce(m.seq, m.data ?? exchange.subarray(0, m.exchange ?? 0), m.generation, m.wire, m.phases);
    else
      toCompute({ kind: "allReduceFailed", seq: m.seq, error: toWireError(new CollectiveError("no driver session")) });
  }

  sessionEnded(session: Session, reason: string, said = false): void {
    if (this.session !== session) return;
    this.session = null;
    for (const [key, e] of this.earlyPeers) {
      if (key.startsWith(`${session.id}/`)) {
        clearTimeout(e.timer);
        e.link.close(CLOSE.normal, "session over");
        this.earlyPeers.delete(key);
      }
    }
    toCompute({ kind: "sessionEnded", reason });
    if (config.exitWithDriver) this.exit(0, reason, said);
  }

  exit(code: number, reason: string, said = false): void {
    toCompute({ kind: "exit", code, reason, said });
  }
}
