import { WorkerLostError, type MeshtrainError } from "../errors/errors";
import type { HandlingCost } from "../plan/core-load";
import type { WorkerInfo } from "../protocol/messages";
import type { WorkerSnapshot } from "../config/worker-snapshot";
import { Channel } from "../transport/channel";
import type { Link } from "../transport/link";
import { describeExit, type LocalWorkerProcess } from "./local-process";
import type { WorkerOutput } from "./worker-output";

/** How long a closed connection waits for its local process's exit, to say how it ended. */
const EXIT_WAIT_MS = 2000;

/** What a worker last said it was doing (its progress messages), for stall reports. */
export interface WorkerProgress {
  action: string;
  state: "busy" | "waiting" | "idle" | "failed";
  detail: string | undefined;
  /** When the action started, on the driver's clock (performance.now()). */
  since: number;
}

export interface HandleOptions {
  /** A worker's rank, or a parameter server's index. */
  rank: number;
  role: "worker" | "ps";
  address: string;
  link: Link;
  process: LocalWorkerProcess | undefined;
  chunkElements: number;
  maxFrameBytes: number;
  /** The step the cluster is at, for error messages. */
  stepNow(): number | undefined;
  onLost(handle: WorkerHandle, err: MeshtrainError): void;
  /** Where the workers' output lines go (a local worker's through its pipes, another's as messages); lost-worker errors quote its last ones. */
  output: WorkerOutput;
}

/**
 * The driver's side of one worker: its control channel, its process when local, and the one
 * error that says why it was lost, if it was.
 */
export class WorkerHandle {
  /** Fixed once it is a member; a spare takes the rank it fills (renumber). */
  rank: number;
  /** Fixed once it is a member; a spare takes the role of the one it replaces (renumber). */
  role: "worker" | "ps";
  readonly address: string;
  readonly channel: Channel;
  readonly process: LocalWorkerProcess | undefined;
  info: WorkerInfo | undefined;
  /** Worker clock minus driver clock, in ms, estimated when it joined. */
  clockOffsetMs = 0;
  /** The driver's link to this worker, measured at launch (1 MiB one way). */
  linkBytesPerSecond = 0;
  /** One-way latency of a message on the driver's link to it (half the measured round trip), ms. */
  linkLatencyMs = 0;
  /** What receiving a message costs its process's CPU, from the link probes, where it said (a tab cannot). */
  handling: HandlingCost | undefined = undefined;
  lost: MeshtrainError | undefined;
  /** Its last progress report, if it sent one. */
  progress: WorkerProgress | undefined;
  private expectedClose = false;
  private markClosed: () => void = () => undefined;
  /** Resolves when the connection to the worker has closed, for whatever reason. */
  readonly closed: Promise<void> = new Promise((resolve) => (this.markClosed = resolve));

  constructor(private readonly o: HandleOptions) {
    this.rank = o.rank;
    this.role = o.role;
    this.address = o.address;
    this.process = o.process;
    const self = this;
    this.channel = new Channel(o.link, {
      // Read when an error is made: a spare's name changes when it takes a rank.
      get peerName() {
        return self.name;
      },
      get details() {
        return { rank: self.rank, address: o.address };
      },
      chunkElements: o.chunkElements,
      maxFrameBytes: o.maxFrameBytes,
      maxAttachmentBytes: 4 * 1024 * 1024 * 1024,
      onMessage: (incoming) => {
        const m = incoming.msg;
        if (m.type === "output") {
          for (const line of m.lines) o.output.line(this.label, m.stream, line);
          o.output.droppedAtWorker(this.label, m.dropped ?? 0);
        } else if (m.type === "progress") {
          const same = this.progress && this.progress.action === m.action && this.progress.state === m.state;
          this.progress = {
            action: m.action,
            state: m.state,
            detail: m.detail,
            since: same ? this.progress!.since : performance.now() - m.forMs,
          };
        }
      },
      onClose: (err) => {
        this.markClosed();
        void this.onChannelClosed(err);
      },
      onInvalid: (err) => {
        if (process.env.MESHTRAIN_DEBUG)
          process.stderr.write(`meshtrain: refused a frame from ${this.name}: ${err.summary}\n`);
      },
    });
    o.process?.whenExited().then((exit) => {
      if (this.expectedClose) return;
      this.markLost(this.lostError(`exited (${describeExit(exit)})`));
    });
  }

  /** The prefix of its output lines: "rank 1" or "server 0". */
  get label(): string {
    return this.spare !== undefined ? `spare ${this.spare}` : labelOf(this.role, this.rank);
  }

  get name(): string {
    if (this.spare !== undefined) return `spare worker ${this.spare}`;
    return this.role === "ps" ? `parameter server ${this.rank}` : `worker rank ${this.rank}`;
  }

  /** An idle spare (`.spares(n)`) is named by its place among the spares until it takes a rank. */
  private spare: number | undefined;

  markSpare(index: number): void {
    this.spare = index;
  }

  /** A spare taking a member's place becomes the rank (or server index) it fills, and its role. */
  renumber(rank: number, role: "worker" | "ps" = "worker"): void {
    this.role = role;
    this.rank = rank;
    this.spare = undefined;
  }

  /**
   * A member the fit went on without: its process is killed and its connection dropped, so a
   * frozen one that wakes cannot answer a step it no longer belongs to.
   */
  fence(): void {
    this.process?.kill("SIGKILL");
    this.channel.close();
  }

  snapshot(): WorkerSnapshot {
    return Object.freeze({
      rank: this.rank,
      address: this.address,
      local: this.process !== undefined,
      info: this.info!,
    });
  }

  startHeartbeat(intervalMs: number, timeoutMs: number): void {
    this.channel.startHeartbeat(intervalMs, timeoutMs, (silentMs) => {
      this.markLost(this.lostError(`was silent for ${silentMs} ms (heartbeat timeout ${timeoutMs} ms)`));
    });
  }

  /** From now on a closing connection or exiting process is part of shutting down, not a loss. */
  expectClose(): void {
    this.expectedClose = true;
    this.channel.stopHeartbeat();
  }

  private lostError(what: string): WorkerLostError {
    const step = this.o.stepNow();
    const pid = this.process ? `, pid ${this.process.pid}` : "";
    const at = step !== undefined ? ` at step ${step}` : "";
    const output = this.o.output.lastLines(this.label, 20).join("\n");
    return new WorkerLostError(`${this.name} (${this.address}${pid}) ${what}${at}`, {
      details: {
        ...(this.role === "ps" ? { server: this.rank } : { rank: this.rank }),
        address: this.address,
        ...(step !== undefined ? { step } : {}),
      },
      hint:
        (this.process
          ? "the other workers were stopped; launch a new cluster to continue"
          : "check the worker's host; the other workers were released") +
        (output ? `. Its last output:\n${output}` : ""),
    });
  }

  private async onChannelClosed(closeError: MeshtrainError): Promise<void> {
    if (this.expectedClose || this.lost) return;
    // The worker said why it closed (e.g. it serves another driver): that is the error.
    if (!(closeError instanceof WorkerLostError)) {
      this.markLost(closeError);
      return;
    }
    // A killed local worker closes its socket a moment before its exit is reported; wait for
    // the exit so the error can say how it ended (on a swamped machine over 500 ms later).
    const exit = this.process
      ? ((await Promise.race([this.process.whenExited(), delay(EXIT_WAIT_MS)])) ?? this.process.exit)
      : undefined;
    if (this.lost || this.expectedClose) return;
    this.markLost(this.lostError(exit ? `exited (${describeExit(exit)})` : "closed its connection"));
  }

  markLost(err: MeshtrainError): void {
    if (this.lost || this.expectedClose) return;
    this.lost = err;
    this.channel.fail(err);
    this.o.onLost(this, err);
  }
}

export function labelOf(role: "worker" | "ps", index: number): string {
  return role === "ps" ? `server ${index}` : `rank ${index}`;
}

function delay(ms: number): Promise<undefined> {
  return new Promise((resolve) => setTimeout(() => resolve(undefined), ms));
}
