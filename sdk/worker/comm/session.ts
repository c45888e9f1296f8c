import type { AllReducer } from "../../collectives/all-reducer";
import type { RingPhases } from "../../collectives/segments";
import type { WireFormat } from "../../protocol/wire-formats";
import { RingAllReduce, type RingNeighbours } from "../../collectives/ring-allreduce";
import { PipeEnds } from "../../collectives/pipe-links";
import { CollectiveError, ConfigError, ProtocolError } from "../../errors/errors";
import type { MessageOf } from "../../protocol/messages";
import { WORKER_SERVES } from "../../protocol/message-traits";
import { toWireError } from "../../protocol/wire-error";
import type { Channel, Incoming } from "../../transport/channel";
import { offerHandshake } from "../../transport/handshake";
import { CLOSE, type Link } from "../../transport/link";
import { dial } from "../../transport/ws-endpoint";
import { transferList } from "../bridge";
import { OutputRelay } from "./output-relay";
import { ProgressReporter } from "./progress";
import { PsLinks } from "./ps-links";
import { wireRing } from "./ring-wiring";
import { channelTo } from "./channel-to";
import { config, log, toCompute } from "./thread";

const noNeighbours: RingNeighbours = {
  sendToNext: () => Promise.resolve(),
  prevName: "nobody",
  nextName: "nobody",
};

/** What a session needs from the server that accepted it. */
export interface SessionHost {
  /** A peer that connected before this worker was configured, if one did. */
  takeEarlyPeer(session: string, rank: number, kind: "ring" | "pipe"): Link | undefined;
  /** `said`: the session ended on the worker's own judgement, which its output should say. */
  sessionEnded(session: Session, reason: string, said?: boolean): void;
  exit(code: number, reason: string): void;
}

/**
 * One driver's session on this worker: its control channel, and the links the driver's
 * configure asks for (ring neighbours, pipeline neighbours, parameter servers).
 */
export class Session {
  id: string | undefined;
  rank = -1;
  ring: AllReducer | null = null;
  stepTimeoutMs = 600_000;
  heartbeat = { intervalMs: 1000, timeoutMs: 10_000 };
  private closeRing: (() => void) | null = null;
  private pipe: PipeEnds | null = null;
  readonly ps = new PsLinks(this);
  readonly progress = new ProgressReporter(() => this.waitingFor());
  readonly output = new OutputRelay(() => (this.ended ? undefined : this.channel));
  /** The pipeline neighbours, named for stall reports. */
  private pipeNames = "";
  /** Peers this worker waits for, by "rank/link". */
  private readonly waiting = new Map<string, (link: Link) => void>();
  ended = false;
  /** The compute thread holds a model: a fit is under way (the driver releases it when the fit ends). */
  private fitting = false;
  /** The membership the current links belong to (elastic training re-forms them). */
  private generation = 0;
  /** The certificate authority the driver trusts, for wss:// links to the other workers. */
  private ca: string | undefined;
  readonly channel: Channel;
  private linkClosed: () => void = () => undefined;
  /** Resolves once the driver's connection has closed (its close handshake done). */
  private readonly whenLinkClosed = new Promise<void>((resolve) => (this.linkClosed = resolve));

  constructor(private readonly server: SessionHost, link: Link) {
    this.channel = channelTo(link, "the driver", { address: link.address }, {
      onMessage: (incoming) => this.onMessage(incoming),
      onClose: (err) => {
        this.linkClosed();
        this.end(`driver connection closed: ${err.summary}`);
      },
    });
  }

  /**
   * The process is about to exit (a crash): the output is sent and the connection closed with
   * a close handshake, waited for up to `ms`. Exiting at once could leave the driver's last
   * frames unread here, and a socket closed with unread input is reset, which may drop the
   * lines just sent before the driver reads them.
   */
  endBeforeExit(ms: number): Promise<void> {
    this.end("the worker process is exiting");
    return Promise.race([this.whenLinkClosed, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
  }

  private onMessage(incoming: Incoming): void {
    const msg = incoming.msg;
    switch (msg.type) {
      case "join":
        this.id = msg.session;
        this.heartbeat = { intervalMs: msg.heartbeatIntervalMs, timeoutMs: msg.heartbeatTimeoutMs };
        this.watchDriver(msg.heartbeatIntervalMs, msg.heartbeatTimeoutMs, msg.heartbeatIdleTimeoutMs);
        this.progress.start(this.channel, msg.heartbeatIntervalMs);
        this.forward(incoming);
        return;
      case "configure":
        if (msg.generation !== undefined) toCompute({ kind: "generation", n: msg.generation });
        this.configure(msg).then(
          () => this.channel.send({ type: "configured", re: msg.id }),
          (err: unknown) => this.channel.replyError(msg.id, err),
        );
        return;
      case "shutdown":
        if (config.exitWithDriver) this.server.exit(0, "shutdown requested by the driver");
        else log("ignored a shutdown request: this worker serves until it is stopped");
        return;
      default:
        if (WORKER_SERVES[msg.type] !== "compute") throw new ProtocolError(`a worker does not accept "${msg.type}" from the driver`);
        if (this.id === undefined) throw new ProtocolError(`"${msg.type}" before "join"`);
        this.forward(incoming);
    }
  }

  /**
   * Within a fit the driver's silence past the heartbeat timeout ends the session: the step
   * waits on it. Between fits its thread may compute or compile a notebook cell for longer, and
   * nothing waits on it, so the worker holds on up to the idle timeout; a driver that is gone
   * closes its connection, which ends the session at once.
   */
  private watchDriver(intervalMs: number, timeoutMs: number, idleTimeoutMs: number): void {
    const idleMs = Math.max(timeoutMs, idleTimeoutMs);
    this.channel.startHeartbeat(intervalMs, () => (this.fitting ? timeoutMs : idleMs), (ms, limitMs) =>
      this.end(
        limitMs === timeoutMs ? `the driver was silent for ${ms} ms (heartbeat timeout ${timeoutMs} ms)` : `the driver was silent for ${ms} ms between fits (idle timeout ${idleMs} ms)`,
        true,
      ),
    );
  }

  /** The compute thread loaded a model, or dropped it (released, replaced, or its load failed). */
  holdsModel(model: boolean): void {
    this.fitting = model;
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
    // A step still waiting on the old pipeline links (a stage lost, the rest wired anew to go on) must end, not wait for its timeout.
    if (this.pipe) toCompute({ kind: "pipeFailed", error: toWireError(new CollectiveError("the pipeline links were configured anew")) });
    this.closePeers();
    this.generation = msg.generation ?? 0;
    this.rank = msg.rank;
    this.ca = msg.ca;
    this.stepTimeoutMs = msg.stepTimeoutMs;
    await this.connectPeers(msg, members);
  }

  /** Every link this worker needs, dialled and accepted at once (its neighbours do the same). */
  private async connectPeers(msg: MessageOf<"configure">, members: readonly number[]): Promise<void> {
    const name = (r: number): string => `rank ${r} (${msg.addresses[r]})`;
    const timeout = msg.connectTimeoutMs;
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
      Promise.all((msg.servers ?? []).map((url, i) => this.dialPeer(url, i, "ps", timeout).then((l) => this.ps.serverChannel(l, i)))),
    ]);
    this.ps.servers = servers;
    if (ringFromPrev && ringToNext) {
      const links = { fromPrev: ringFromPrev, toNext: ringToNext, prevName: name(ringPrev!), nextName: name(ringNext!), position: pos, size: g, chunkElements: msg.chunkElements, heartbeat: this.heartbeat };
      const wired = await wireRing(msg, links, { rank: msg.rank, prev: ringPrev!, next: ringNext! }).catch((err: unknown) => {
        ringFromPrev.close(CLOSE.normal, "data plane failed");
        ringToNext.close(CLOSE.normal, "data plane failed");
        throw err;
      });
      this.ring = wired.ring;
      this.closeRing = wired.close;
    } else {
      this.ring = new RingAllReduce(noNeighbours, 0, 1, msg.chunkElements);
    }
    toCompute(ringFromPrev && ringToNext ? { kind: "ringPlace", position: pos, size: g } : { kind: "ringPlace", position: 0, size: 1 });
    this.pipeNames = [pipePrev === null ? "" : `previous stage ${name(pipePrev)}`, pipeNext === null ? "" : `next stage ${name(pipeNext)}`].filter(Boolean).join("; ");
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

  /** Who the compute thread's current wait is for, as far as the links can tell. */
  private waitingFor(): string | undefined {
    return this.ring?.waitingFor() ?? this.ps.waitingFor() ?? (this.pipe ? this.pipeNames : undefined);
  }

  pipeSend(to: "prev" | "next", kind: "activation" | "gradient", step: number, micro: number, data: Float32Array): void {
    if (!this.pipe) {
      toCompute({ kind: "pipeFailed", error: toWireError(new ProtocolError("a pipeline tensor was sent before the pipeline links were configured")) });
      return;
    }
    this.pipe.send(to, kind, step, micro, data).catch((err: unknown) => toCompute({ kind: "pipeFailed", error: toWireError(err) }));
  }

  allReduce(seq: number, data: Float32Array, generation: number, wire?: WireFormat, phases?: RingPhases): void {
    if (generation !== this.generation) {
      toCompute({ kind: "allReduceFailed", seq, error: toWireError(new CollectiveError(`an all-reduce of membership ${generation} reached the ring of membership ${this.generation}: dropped`)) });
      return;
    }
    const ring = this.ring;
    if (!ring) {
      toCompute({ kind: "allReduceFailed", seq, error: toWireError(new ProtocolError("all-reduce before the ring was configured")) });
      return;
    }
    ring.run(data, seq, this.stepTimeoutMs, wire, phases).then(
      (stats) =>
        data.buffer instanceof ArrayBuffer ? toCompute({ kind: "allReduced", seq, data, stats }, [data.buffer]) : toCompute({ kind: "allReduced", seq, stats }),
      (err: unknown) => toCompute({ kind: "allReduceFailed", seq, error: toWireError(err) }),
    );
  }

  private closePeers(): void {
    this.ps.closeServers("links reconfigured");
    this.pipe?.close();
    this.pipe = null;
    this.closeRing?.();
    this.closeRing = null;
    this.ring?.fail(new CollectiveError("the ring was closed"));
    this.ring = null;
  }

  end(reason: string, said = false): void {
    if (this.ended) return;
    // Before `ended`: the relay sends only while the session lasts.
    this.output.flush();
    this.ended = true;
    this.progress.stop();
    this.channel.stopHeartbeat();
    this.closePeers();
    this.ps.closeClients();
    this.channel.close(CLOSE.normal, "session over");
    this.server.sessionEnded(this, reason, said);
  }
}
