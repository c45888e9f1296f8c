import { parentPort, workerData } from "node:worker_threads";
import { RingAllReduce, type RingNeighbours } from "../collectives/ring-allreduce";
import { PipeEnds } from "../collectives/pipe-links";
import { ringOverLinks } from "../collectives/ring-over-links";
import { CollectiveError, ConfigError, isMeshtrainError, ProtocolError, WorkerLostError, type ErrorDetails, type MeshtrainError } from "../errors/errors";
import type { MessageOf } from "../protocol/messages";
import { fromWireError, toWireError } from "../protocol/wire-error";
import { Channel, type ChannelOptions, type Incoming } from "../transport/channel";
import { acceptHandshake, offerHandshake, type AuthMessage } from "../transport/handshake";
import { HandshakeLimiter } from "../transport/handshake-limiter";
import { CLOSE, type Link } from "../transport/link";
import { dial, listen } from "../transport/ws-endpoint";
import { transferList, type CommConfig, type CommToCompute, type ComputeToComm } from "./bridge";

/**
 * The communication thread of a worker: owns the listening socket, authenticates every
 * connection, validates every frame, runs the ring all-reduce with its neighbours, and keeps
 * answering heartbeats while the compute thread is busy. It serves one driver at a time.
 */

const config = workerData as CommConfig;
const port = parentPort!;
const MAX_ATTACHMENT_BYTES = 4 * 1024 * 1024 * 1024;

function toCompute(m: CommToCompute, transfer: ArrayBuffer[] = []): void {
  port.postMessage(m, transfer);
}

function log(text: string): void {
  process.stderr.write(`[meshtrain worker ${process.pid}] ${text}\n`);
}

/** A control channel to the driver or a peer, with this worker's limits; refused frames are logged. */
function channelTo(link: Link, peerName: string, details: ErrorDetails, on: Pick<ChannelOptions, "onMessage" | "onClose">): Channel {
  return new Channel(link, {
    peerName,
    details,
    chunkElements: 256 * 1024,
    maxFrameBytes: config.maxFrameBytes,
    maxAttachmentBytes: MAX_ATTACHMENT_BYTES,
    ...on,
    onInvalid: (err) => log(`refused a frame from ${peerName}: ${err.summary}`),
  });
}

const noNeighbours: RingNeighbours = {
  sendToNext: () => Promise.resolve(),
  prevName: "nobody",
  nextName: "nobody",
};

class Session {
  id: string | undefined;
  rank = -1;
  ring: RingAllReduce | null = null;
  stepTimeoutMs = 600_000;
  heartbeat = { intervalMs: 1000, timeoutMs: 10_000 };
  private closeRing: (() => void) | null = null;
  private pipe: PipeEnds | null = null;
  /** Strategy "ps", on a worker: its link to each parameter server, in server order. */
  private servers: Channel[] = [];
  /** Strategy "ps", on a server: the workers' links to it, by an id replies are routed with. */
  private readonly clients = new Map<number, Channel>();
  private nextClient = 1;
  /** Peers this worker waits for, by "rank/link". */
  private readonly waiting = new Map<string, (link: Link) => void>();
  ended = false;
  /** The membership the current links belong to (elastic training re-forms them). */
  private generation = 0;
  /** The certificate authority the driver trusts, for wss:// links to the other workers. */
  private ca: string | undefined;
  readonly channel: Channel;

  constructor(private readonly server: CommServer, link: Link) {
    this.channel = channelTo(link, "the driver", { address: link.address }, {
      onMessage: (incoming) => this.onMessage(incoming),
      onClose: (err) => this.end(`driver connection closed: ${err.summary}`),
    });
  }

  private onMessage(incoming: Incoming): void {
    const msg = incoming.msg;
    switch (msg.type) {
      case "join":
        this.id = msg.session;
        this.heartbeat = { intervalMs: msg.heartbeatIntervalMs, timeoutMs: msg.heartbeatTimeoutMs };
        this.channel.startHeartbeat(msg.heartbeatIntervalMs, msg.heartbeatTimeoutMs, (ms) =>
          this.end(`the driver was silent for ${ms} ms`),
        );
        this.forward(incoming);
        return;
      case "configure":
        if (msg.generation !== undefined) toCompute({ kind: "generation", n: msg.generation });
        this.configure(msg).then(
          () => this.channel.send({ type: "configured", re: msg.id }),
          (err: unknown) => this.channel.replyError(msg.id, err),
        );
        return;
      case "load":
      case "step":
      case "applied":
      case "fetchState":
      case "setState":
      case "rewind":
      case "fetchWeights":
      case "digest":
      case "probe":
      case "release":
        if (this.id === undefined) throw new ProtocolError(`"${msg.type}" before "join"`);
        this.forward(incoming);
        return;
      case "shutdown":
        if (config.exitWithDriver) this.server.exit(0, "shutdown requested by the driver");
        else log("ignored a shutdown request: this worker serves until it is stopped");
        return;
      default:
        throw new ProtocolError(`a worker does not accept "${msg.type}" from the driver`);
    }
  }

  private forward(incoming: Incoming): void {
    toCompute({ kind: "request", msg: incoming.msg, attachments: incoming.attachments }, transferList(incoming.attachments));
  }

  private async configure(msg: MessageOf<"configure">): Promise<void> {
    if (this.id === undefined) throw new ProtocolError('"configure" before "join"');
    const n = msg.worldSize;
    const members = msg.ring.length === 0 ? [msg.rank] : msg.ring;
    const groupOk = new Set(members).size === members.length && members.every((r) => r >= 0 && r < n) && members.includes(msg.rank);
    const pipeOk = [msg.pipe?.prev, msg.pipe?.next].every((r) => r === undefined || r === null || (r >= 0 && r < n && r !== msg.rank));
    if (!groupOk || !pipeOk || msg.addresses.length !== n || msg.rank >= n) {
      throw new ConfigError(
        `configure: rank ${msg.rank} of ${n} with all-reduce group [${members.join(", ")}], pipeline ${JSON.stringify(msg.pipe ?? null)} and ${msg.addresses.length} addresses is inconsistent`,
      );
    }
    this.closePeers();
    this.generation = msg.generation ?? 0;
    this.rank = msg.rank;
    this.ca = msg.ca;
    this.stepTimeoutMs = msg.stepTimeoutMs;
    const name = (r: number): string => `rank ${r} (${msg.addresses[r]})`;
    const timeout = msg.connectTimeoutMs;
    // Every link this worker needs, dialled and accepted at once (neighbours do the same).
    const pos = members.indexOf(msg.rank);
    const g = members.length;
    const ringPrev = g > 1 ? members[(pos - 1 + g) % g]! : null;
    const ringNext = g > 1 ? members[(pos + 1) % g]! : null;
    const pipePrev = msg.pipe?.prev ?? null;
    const pipeNext = msg.pipe?.next ?? null;
    const [ringFromPrev, ringToNext, pipeToPrev, pipeFromNext, servers] = await Promise.all([
      ringPrev === null ? null : this.dialPeer(msg.addresses[ringPrev]!, ringPrev, "ring", timeout),
      ringNext === null ? null : this.awaitPeer(ringNext, "ring", timeout),
      pipePrev === null ? null : this.dialPeer(msg.addresses[pipePrev]!, pipePrev, "pipe", timeout),
      pipeNext === null ? null : this.awaitPeer(pipeNext, "pipe", timeout),
      Promise.all((msg.servers ?? []).map((url, i) => this.dialPeer(url, i, "ps", timeout).then((l) => this.serverChannel(l, i)))),
    ]);
    this.servers = servers;
    if (ringFromPrev && ringToNext) {
      const wired = ringOverLinks({
        fromPrev: ringFromPrev,
        toNext: ringToNext,
        prevName: name(ringPrev!),
        nextName: name(ringNext!),
        position: pos,
        size: g,
        chunkElements: msg.chunkElements,
        heartbeat: this.heartbeat,
      });
      this.ring = wired.ring;
      this.closeRing = wired.close;
    } else {
      this.ring = new RingAllReduce(noNeighbours, 0, 1, msg.chunkElements);
    }
    if (pipeToPrev || pipeFromNext) {
      this.pipe = new PipeEnds({
        prev: pipeToPrev ? { link: pipeToPrev, name: name(pipePrev!) } : null,
        next: pipeFromNext ? { link: pipeFromNext, name: name(pipeNext!) } : null,
        chunkElements: msg.chunkElements,
        heartbeat: this.heartbeat,
        onTensor: (t) => toCompute({ kind: "pipeTensor", frameKind: t.kind, step: t.step, micro: t.micro, data: t.data }, [t.data.buffer as ArrayBuffer]),
        onFailure: (err) => toCompute({ kind: "pipeFailed", error: toWireError(err) }),
      });
    }
  }

  /** A worker's link to parameter server `index`: requests with timeouts, and a heartbeat. */
  private serverChannel(link: Link, index: number): Channel {
    const name = `parameter server ${index} (${link.address})`;
    const ch = channelTo(link, name, { address: link.address }, { onMessage: () => undefined, onClose: () => undefined });
    ch.startHeartbeat(this.heartbeat.intervalMs, this.heartbeat.timeoutMs, (ms) =>
      ch.fail(new WorkerLostError(`${name} was silent for ${ms} ms`, { details: { address: link.address } })),
    );
    return ch;
  }

  /** A worker reached this parameter server: its pulls and pushes go to the compute thread. */
  addClient(rank: number, link: Link): void {
    const via = this.nextClient++;
    const ch = channelTo(link, `worker rank ${rank}`, { rank, address: link.address }, {
      onMessage: (incoming) => {
        const t = incoming.msg.type;
        if (t !== "pull" && t !== "push") throw new ProtocolError(`a worker's link to a parameter server carries pulls and pushes, not "${t}"`);
        toCompute({ kind: "request", msg: incoming.msg, attachments: incoming.attachments, via }, transferList(incoming.attachments));
      },
      onClose: () => this.clients.delete(via),
    });
    this.clients.set(via, ch);
  }

  client(via: number): Channel | undefined {
    return this.clients.get(via);
  }

  psPull(seq: number, minVersion: number | undefined): void {
    const waitingFor = minVersion === undefined ? "the parameters" : `the parameters of step ${minVersion}`;
    this.onServers(
      seq,
      this.servers.map((ch) => ch.request({ type: "pull", rank: this.rank, ...(minVersion !== undefined ? { minVersion } : {}) }, "pulled", { timeoutMs: this.stepTimeoutMs, waitingFor })),
      (replies) => {
        const shards = replies.map((r) => r.attachments[0]!.data as Float32Array);
        toCompute({ kind: "psPulled", seq, shards, versions: replies.map((r) => r.msg.version), waitedMs: replies.map((r) => r.msg.waitedMs) }, shards.map((d) => d.buffer as ArrayBuffer));
      },
    );
  }

  psPush(seq: number, clock: number, pulled: number[], shards: Float32Array[]): void {
    this.onServers(
      seq,
      this.servers.map((ch, i) =>
        ch.request({ type: "push", rank: this.rank, clock, pulled: pulled[i] ?? 0 }, "pushed", {
          timeoutMs: this.stepTimeoutMs,
          waitingFor: `the acknowledgement of step ${clock}'s push`,
          attachments: [{ data: shards[i]!, shape: [shards[i]!.length] }],
        }),
      ),
      (replies) => toCompute({ kind: "psPushed", seq, versions: replies.map((r) => r.msg.version), staleness: replies.map((r) => r.msg.staleness) }),
    );
  }

  private onServers<T>(seq: number, requests: Array<Promise<T>>, done: (replies: T[]) => void): void {
    if (this.servers.length === 0) {
      toCompute({ kind: "psFailed", seq, error: toWireError(new ProtocolError("a pull or push before the parameter-server links were configured")) });
      return;
    }
    Promise.all(requests).then(done, (err: unknown) => toCompute({ kind: "psFailed", seq, error: toWireError(err) }));
  }

  private async dialPeer(url: string, peerRank: number, link: "ring" | "pipe" | "ps", timeoutMs: number): Promise<Link> {
    const l = await dial(url, { maxFrameBytes: config.maxFrameBytes, timeoutMs, ...(this.ca ? { ca: Buffer.from(this.ca) } : {}) });
    try {
      await offerHandshake(l, {
        token: config.token,
        timeoutMs,
        role: "peer",
        peer: { session: this.id!, rank: this.rank, link },
        who: link === "ps" ? `parameter server ${peerRank}` : `rank ${peerRank}`,
      });
    } catch (err) {
      l.terminate();
      throw err;
    }
    return l;
  }

  private awaitPeer(peerRank: number, link: "ring" | "pipe", timeoutMs: number): Promise<Link> {
    const early = this.server.takeEarlyPeer(this.id!, peerRank, link);
    if (early) return Promise.resolve(early);
    const key = `${peerRank}/${link}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(key);
        reject(
          new CollectiveError(`rank ${this.rank} waited ${timeoutMs} ms for rank ${peerRank} to connect its ${link} link`, {
            details: { rank: this.rank, waitingFor: `${link} link from rank ${peerRank}` },
            hint: `rank ${peerRank} must be able to reach this worker's address; check firewalls and --host`,
          }),
        );
      }, timeoutMs);
      this.waiting.set(key, (l) => {
        clearTimeout(timer);
        this.waiting.delete(key);
        resolve(l);
      });
    });
  }

  /** A peer that authenticated for this session; true if this session was waiting for it. */
  offerPeer(rank: number, link: "ring" | "pipe", l: Link): boolean {
    const take = this.waiting.get(`${rank}/${link}`);
    if (!take) return false;
    take(l);
    return true;
  }

  pipeSend(to: "prev" | "next", kind: "activation" | "gradient", step: number, micro: number, data: Float32Array): void {
    if (!this.pipe) {
      toCompute({ kind: "pipeFailed", error: toWireError(new ProtocolError("a pipeline tensor was sent before the pipeline links were configured")) });
      return;
    }
    this.pipe.send(to, kind, step, micro, data).catch((err: unknown) => toCompute({ kind: "pipeFailed", error: toWireError(err) }));
  }

  allReduce(seq: number, data: Float32Array, generation: number): void {
    if (generation !== this.generation) {
      toCompute({ kind: "allReduceFailed", seq, error: toWireError(new CollectiveError(`an all-reduce of membership ${generation} reached the ring of membership ${this.generation}: dropped`)) });
      return;
    }
    const ring = this.ring;
    if (!ring) {
      toCompute({ kind: "allReduceFailed", seq, error: toWireError(new ProtocolError("all-reduce before the ring was configured")) });
      return;
    }
    ring.run(data, seq, this.stepTimeoutMs).then(
      (stats) => toCompute({ kind: "allReduced", seq, data, stats }, [data.buffer as ArrayBuffer]),
      (err: unknown) => toCompute({ kind: "allReduceFailed", seq, error: toWireError(err) }),
    );
  }

  private closePeers(): void {
    for (const ch of this.servers) ch.close(CLOSE.normal, "links reconfigured");
    this.servers = [];
    this.pipe?.close();
    this.pipe = null;
    this.closeRing?.();
    this.closeRing = null;
    this.ring?.fail(new CollectiveError("the ring was closed"));
    this.ring = null;
  }

  end(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.channel.stopHeartbeat();
    this.closePeers();
    for (const ch of this.clients.values()) ch.close(CLOSE.normal, "session over");
    this.clients.clear();
    this.channel.close(CLOSE.normal, "session over");
    this.server.sessionEnded(this, reason);
  }
}

/** Failed handshakes allowed per remote host before it is refused for a while. */
const LIMITS = { maxFailures: 5, windowMs: 60_000, banMs: 60_000 };

class CommServer {
  private session: Session | null = null;
  private readonly limiter = new HandshakeLimiter(LIMITS);
  private readonly earlyPeers = new Map<string, { link: Link; timer: NodeJS.Timeout }>();

  async start(): Promise<void> {
    const listener = await listen({
      host: config.host,
      port: config.port,
      maxFrameBytes: config.maxFrameBytes,
      maxConnections: config.maxConnections,
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
        else this.onPeer(link, auth);
      },
      (err: MeshtrainError) => {
        log(`refused a connection from ${link.address}: ${err.summary}`);
        if (this.limiter.failed(host)) log(`refusing every connection from ${host} for ${LIMITS.banMs / 1000} s: ${LIMITS.maxFailures} failed handshakes within ${LIMITS.windowMs / 1000} s`);
      },
    );
  }

  private onDriver(link: Link): void {
    // A driver that closed its cluster a moment ago: its session is over even if the close is still in flight.
    if (this.session && !this.session.ended && this.session.channel.link.closed) this.session.end("the driver closed its connection");
    if (this.session && !this.session.ended) {
      link.sendText(
        JSON.stringify({
          type: "error",
          v: 1,
          error: toWireError(
            new ProtocolError("this worker is serving another driver", { hint: "wait for that driver to close its cluster, or start another worker" }),
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
      s.addClient(peer.rank, link);
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
        const ch = m.via === undefined ? s?.channel : s?.client(m.via);
        if (s && !s.ended && ch && !ch.closed) ch.send(m.draft, m.attachments);
        return;
      }
      case "replyError": {
        const ch = m.via === undefined ? s?.channel : s?.client(m.via);
        if (s && !s.ended && ch && !ch.closed) ch.replyError(m.re, fromWireError(m.error));
        return;
      }
      case "psPull":
        if (s && !s.ended) s.psPull(m.seq, m.minVersion);
        else toCompute({ kind: "psFailed", seq: m.seq, error: toWireError(new CollectiveError("no driver session")) });
        return;
      case "psPush":
        if (s && !s.ended) s.psPush(m.seq, m.clock, m.pulled, m.shards);
        else toCompute({ kind: "psFailed", seq: m.seq, error: toWireError(new CollectiveError("no driver session")) });
        return;
      case "allReduce":
        if (s && !s.ended) s.allReduce(m.seq, m.data, m.generation);
        else toCompute({ kind: "allReduceFailed", seq: m.seq, error: toWireError(new CollectiveError("no driver session")) });
        return;
      case "pipeSend":
        if (s && !s.ended) s.pipeSend(m.to, m.frameKind, m.step, m.micro, m.data);
        return;
    }
  }

  sessionEnded(session: Session, reason: string): void {
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
    if (config.exitWithDriver) this.exit(0, reason);
  }

  exit(code: number, reason: string): void {
    toCompute({ kind: "exit", code, reason });
  }
}

const server = new CommServer();
port.on("message", (m: ComputeToComm) => server.handle(m));
server.start().catch((err: unknown) => {
  log(isMeshtrainError(err) ? err.message : String(err));
  toCompute({ kind: "exit", code: 2, reason: isMeshtrainError(err) ? err.summary : String(err) });
});
