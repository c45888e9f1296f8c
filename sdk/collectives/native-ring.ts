import type { NativeAddon } from "../backends/native/addon";
import { CollectiveError, type MeshtrainError } from "../errors/errors";
import type { AllReducer } from "./all-reducer";
import type { RingPhases } from "./segments";
import { FORMAT_CODE, type WireFormat } from "../protocol/wire-formats";
import { dataPlaneError } from "./native-plane";
import type { AllReduceStats } from "./ring-allreduce";

/** The addon's codes for the phases (dataplane.h: DP_BOTH, DP_REDUCE_SCATTER, DP_ALL_GATHER). */
const PHASE_CODE: Record<RingPhases, number> = { both: 0, reduceScatter: 1, allGather: 2 };

/** How long a ring whose socket was closed under it waits to hear why (a failure from the heartbeats). */
const CAUSE_WAIT_MS = 250;

export interface NativeRingOptions {
  /** The data link this position dialled: the previous position's bytes arrive on it. */
  prevFd: number;
  /** The data link the next position dialled: this position sends on it. */
  nextFd: number;
  prevName: string;
  nextName: string;
  position: number;
  size: number;
  chunkElements: number;
}

/**
 * A ring all-reduce whose bytes move over the native data plane: the addon reads the previous
 * position's socket and writes the next one's on a thread of its own, adding into the array in
 * place, so nothing is copied through JavaScript. The WebSocket links stay open beside it for
 * heartbeats: a neighbour that dies or goes silent fails the ring from there (fail()), which
 * shuts the sockets down and so wakes the native thread.
 */
export class NativeRing implements AllReducer {
  private running: { seq: number } | null = null;
  private lastSeq = -1;
  private failure: MeshtrainError | null = null;
  private closed = false;
  private onFailure: ((err: MeshtrainError) => void) | null = null;
  /** Kept from one operation to the next, grown to the largest: see scratchFor. */
  private scratch = new Uint8Array(0);

  constructor(
    private readonly addon: NativeAddon,
    private readonly o: NativeRingOptions,
  ) {}

  run(
    data: Float32Array,
    seq: number,
    timeoutMs: number,
    wire?: WireFormat,
    phases: RingPhases = "both",
  ): Promise<AllReduceStats> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.running)
      return Promise.reject(
        new CollectiveError(`all-reduce ${seq} started while ${this.running.seq} is still running`),
      );
    if (seq <= this.lastSeq)
      return Promise.reject(new CollectiveError(`all-reduce sequence went backwards: ${seq} after ${this.lastSeq}`));
    this.lastSeq = seq;
    if (this.o.size === 1 || data.length === 0) return Promise.resolve({ waitMs: 0, commMs: 0, bytesSent: 0 });
    if (wire && phases === "allGather")
      return Promise.reject(
        new CollectiveError("an all-gather travels in float32: its owners' values are not rounded to a 16-bit format"),
      );
    this.running = { seq };
    const o = this.o;
    const format = wire ? FORMAT_CODE[wire.compression] : 0;
    return this.addon
      .dataAllReduce(
        o.prevFd,
        o.nextFd,
        data,
        o.position,
        o.size,
        o.chunkElements,
        seq,
        timeoutMs,
        o.prevName,
        o.nextName,
        format,
        wire ? wire.packed : 0,
        PHASE_CODE[phases],
        this.scratchFor(data.length, format),
      )
      .then(
        (stats) => {
          this.settled();
          if (this.failure) throw this.failure;
          return stats;
        },
        async (err: unknown) => {
          this.settled();
          // A failure from the heartbeats (a dead neighbour) is the cause; the closed socket only its
          // echo, which may come first when the heartbeats are watched on another thread.
          const cause =
            this.failure ??
            ((err as { code?: string }).code === "closed" ? await this.causeWithin(CAUSE_WAIT_MS) : undefined);
          throw cause ?? dataPlaneError(err, { step: seq, waitingFor: `all-reduce data from ${o.prevName}` });
        },
      );
  }

  /**
   * The buffer received bytes wait in before they are added. Kept rather than taken fresh:
   * memory freed on the addon's thread went back to the kernel, and faulting a new buffer's
   * pages in on every operation made a 1 MiB all-reduce between two local workers take 5 ms
   * instead of 0.5 (native/src/dataplane.h).
   */
  private scratchFor(n: number, format: number): Uint8Array {
    const need = this.addon.dataScratchBytes(n, this.o.size, this.o.chunkElements, format);
    if (this.scratch.length < need) this.scratch = new Uint8Array(need);
    return this.scratch;
  }

  private causeWithin(ms: number): Promise<MeshtrainError | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.onFailure = null;
        resolve(undefined);
      }, ms);
      this.onFailure = (e) => {
        clearTimeout(timer);
        this.onFailure = null;
        resolve(e);
      };
    });
  }

  fail(err: MeshtrainError): void {
    if (!this.failure) this.failure = err;
    this.onFailure?.(err);
    if (this.closed) return;
    this.closed = true;
    this.addon.dataShutdown(this.o.prevFd);
    this.addon.dataShutdown(this.o.nextFd);
    if (!this.running) this.release();
  }

  waitingFor(): string | undefined {
    return this.running
      ? `all-reduce ${this.running.seq}: data from ${this.o.prevName} over the native data plane`
      : undefined;
  }

  private settled(): void {
    this.running = null;
    if (this.closed) this.release();
  }

  /** The descriptors are closed only once no native thread uses them, so a number is never reused under it. */
  private release(): void {
    this.addon.dataClose(this.o.prevFd);
    this.addon.dataClose(this.o.nextFd);
    this.o.prevFd = -1;
    this.o.nextFd = -1;
  }
}
