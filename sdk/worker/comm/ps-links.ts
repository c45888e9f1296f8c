import type { WireFormat } from "../../protocol/wire-formats";
import { packValues } from "../../collectives/half-pack";
import { ProtocolError, WorkerLostError } from "../../errors/errors";
import { toWireError } from "../../protocol/wire-error";
import { CLOSE, type Link } from "../../transport/link";
import type { Channel, Draft } from "../../transport/channel";
import type { Tensorlike } from "../../protocol/tensor";
import { PullQueue } from "./pull-queue";
import { transferList } from "../bridge";
import { channelTo } from "./channel-to";
import { toCompute } from "./thread";

/**
 * Strategy "ps" links. On a worker: its link to each parameter server, in server order, which
 * carries its pulls and pushes. On a server: the workers' links to it, by an id the compute
 * thread's replies are routed back with.
 */
export class PsLinks {
  /** On a worker: a link to each parameter server, in server order. */
  servers: Channel[] = [];
  private readonly clients = new Map<number, Channel>();
  private nextClient = 1;
  /** The servers that have not yet answered the pull or push in flight (one at a time per worker). */
  private unanswered = new Set<number>();
  private readonly pulls = new PullQueue();

  /** The session's rank, step timeout and heartbeat, read when a link is made or used. */
  constructor(
    private readonly session: {
      readonly rank: number;
      readonly stepTimeoutMs: number;
      readonly heartbeat: { intervalMs: number; timeoutMs: number };
    },
  ) {}

  /** A worker's link to parameter server `index`: requests with timeouts, and a heartbeat. */
  serverChannel(link: Link, index: number): Channel {
    const name = `parameter server ${index} (${link.address})`;
    const ch = channelTo(
      link,
      name,
      { address: link.address },
      { onMessage: () => undefined, onClose: () => undefined },
    );
    ch.startHeartbeat(this.session.heartbeat.intervalMs, this.session.heartbeat.timeoutMs, (ms) =>
      ch.fail(new WorkerLostError(`${name} was silent for ${ms} ms`, { details: { address: link.address } })),
    );
    return ch;
  }

  /** A worker reached this parameter server: its pulls and pushes go to the compute thread. */
  addClient(rank: number, link: Link): void {
    const via = this.nextClient++;
    const ch = channelTo(
      link,
      `worker rank ${rank}`,
      { rank, address: link.address },
      {
        onMessage: (incoming) => {
          const t = incoming.msg.type;
          if (t !== "pull" && t !== "push")
            throw new ProtocolError(`a worker's link to a parameter server carries pulls and pushes, not "${t}"`);
          toCompute(
            { kind: "request", msg: incoming.msg, attachments: incoming.attachments, via },
            transferList(incoming.attachments),
          );
        },
        onClose: () => this.clients.delete(via),
      },
    );
    this.clients.set(via, ch);
  }

  client(via: number): Channel | undefined {
    return this.clients.get(via);
  }

  /** On a server: an answer to a pull, sent after the pulls answered before it (see PullQueue). Its values were handed over by the compute thread: this thread owns them. */
  sendPulled(ch: Channel, draft: Draft, attachments: readonly Tensorlike[]): void {
    const bytes = attachments.reduce((n, t) => n + t.data.byteLength, 0);
    this.pulls.enqueue(() => (ch.closed ? Promise.resolve() : ch.send(draft, attachments, true)), bytes);
  }

  psPull(seq: number, minVersion: number | undefined): void {
    const waitingFor = minVersion === undefined ? "the parameters" : `the parameters of step ${minVersion}`;
    this.onServers(
      seq,
      this.servers.map((ch) =>
        ch.request(
          { type: "pull", rank: this.session.rank, ...(minVersion !== undefined ? { minVersion } : {}) },
          "pulled",
          { timeoutMs: this.session.stepTimeoutMs, waitingFor },
        ),
      ),
      (replies) => {
        const shards = replies.map((r) => r.attachments[0]!.data as Float32Array);
        toCompute(
          {
            kind: "psPulled",
            seq,
            shards,
            versions: replies.map((r) => r.msg.version),
            waitedMs: replies.map((r) => r.msg.waitedMs),
          },
          shards.map((d) => d.buffer as ArrayBuffer),
        );
      },
    );
  }

  /** With `wires`, each shard's leading values go as 16-bit floats (see half-pack). */
  psPush(
    seq: number,
    clock: number,
    pulled: number[],
    shards: Float32Array[],
    wires?: WireFormat[],
    learningRate?: number,
    standIn?: number,
  ): void {
    this.onServers(
      seq,
      this.servers.map((ch, i) => {
        const wire = wires?.[i];
        return ch.request(
          {
            type: "push",
            rank: standIn ?? this.session.rank,
            ...(standIn !== undefined ? { standIn: true as const } : {}),
            clock,
            pulled: pulled[i] ?? 0,
            ...(wire ? { compression: wire.compression } : {}),
            ...(learningRate !== undefined ? { learningRate } : {}),
          },
          "pushed",
          {
            timeoutMs: this.session.stepTimeoutMs,
            waitingFor: `the acknowledgement of step ${clock}'s push`,
            attachments: wire ? packValues(shards[i]!, wire) : [{ data: shards[i]!, shape: [shards[i]!.length] }],
            owned: true,
          },
        );
      }),
      (replies) =>
        toCompute({
          kind: "psPushed",
          seq,
          versions: replies.map((r) => r.msg.version),
          staleness: replies.map((r) => r.msg.staleness),
        }),
    );
  }

  private onServers<T>(seq: number, requests: Array<Promise<T>>, done: (replies: T[]) => void): void {
    if (this.servers.length === 0) {
      toCompute({
        kind: "psFailed",
        seq,
        error: toWireError(new ProtocolError("a pull or push before the parameter-server links were configured")),
      });
      return;
    }
    const unanswered = new Set(requests.map((_, i) => i));
    this.unanswered = unanswered;
    requests.forEach((r, i) =>
      r.then(
        () => unanswered.delete(i),
        () => undefined,
      ),
    );
    Promise.all(requests).then(done, (err: unknown) => toCompute({ kind: "psFailed", seq, error: toWireError(err) }));
  }

  /** Who the pull or push in flight waits for, for stall reports. */
  waitingFor(): string | undefined {
    if (this.unanswered.size === 0) return undefined;
    return `no answer yet from parameter server${this.unanswered.size > 1 ? "s" : ""} ${[...this.unanswered].join(", ")}`;
  }

  /** Closes this worker's links to the servers (links are re-formed). */
  closeServers(reason: string): void {
    for (const ch of this.servers) ch.close(CLOSE.normal, reason);
    this.servers = [];
  }

  /** Closes the workers' links to this server (the session is over). */
  closeClients(): void {
    for (const ch of this.clients.values()) ch.close(CLOSE.normal, "session over");
    this.clients.clear();
  }
}
