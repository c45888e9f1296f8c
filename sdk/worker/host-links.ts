import { nativeDataPlane } from "../collectives/native-plane";
import type { WireFormat } from "../protocol/wire-formats";
import { NativeRing } from "../collectives/native-ring";
import { CollectiveError, ProtocolError, TimeoutError } from "../errors/errors";
import { fromWireError } from "../protocol/wire-error";
import { transferList, type ActivityState, type CommToCompute, type ComputeToComm } from "./bridge";
import type { HostIO, OverlapRing, ServerLinks } from "../roles/role";
import type { AllReduceStats } from "../collectives/ring-allreduce";
import { shardBounds, type RingPhases } from "../collectives/segments";
import { processCpuMs } from "../util/cpu-time";
import { Exchange } from "./exchange";

type Reduced = Awaited<ReturnType<HostIO["allReduce"]>>;

/**
 * The compute thread's side of the links the communication thread holds: all-reduces, pipeline
 * tensors from neighbouring stages, pulls and pushes to parameter servers. Replies come back as
 * thread messages and settle the promise that asked.
 */
export class HostLinks {
  private reduce: { seq: number; resolve(r: Reduced): void; reject(err: unknown): void } | null = null;
  private reduceSeq = 0;
  /** Where all-reduces cross to the communication thread, when the threads can share memory. */
  private readonly exchange = Exchange.available() ? new Exchange((memory) => this.post({ kind: "exchange", memory })) : null;
  /** The ring's native data links, when the communication thread connected them: all-reduces run here, on them. */
  private native: NativeRing | null = null;
  /**
   * The last collective started, on the native ring or through the communication thread: each
   * new one runs after it, so a role may start several without waiting (ZeRO-3 gathers the next
   * layer while this one computes); they run in the order started, the same on every replica.
   */
  private tail: Promise<unknown> = Promise.resolve();
  /** Counts resets: a collective queued before one is not run after it. */
  private resets = 0;
  /** Elastic training: the current membership; all-reduces of steps sent for an earlier one are refused unrun. */
  generation = 0;
  /** The ring probe's kept arrays, by size (ringProbe keep), until the next model or session. */
  private readonly probeArrays = new Map<number, Float32Array>();
  /** Pipeline tensors from neighbouring stages, by "kind/step/micro": arrived, or awaited. */
  private readonly inbox = new Map<string, { data?: Float32Array; take?: (d: Float32Array) => void; fail?: (e: unknown) => void }>();
  private pipeFailure: unknown = null;
  private readonly psPending = new Map<number, { resolve(m: CommToCompute): void; reject(err: unknown): void }>();
  private psSeq = 0;
  stepTimeoutMs = 600_000;
  /** This worker's place in its all-reduce ring (alone until the links are configured). */
  private place = { position: 0, size: 1 };
  /** The step being computed, as activity reports name it. */
  step: number | undefined;

  constructor(private readonly post: (m: ComputeToComm, transfer?: ArrayBuffer[]) => void) {}

  /** Tells the communication thread what this thread does now (the driver's stall reports show it). */
  doing(text: string, state: ActivityState = "busy"): void {
    this.post({ kind: "activity", text, state });
  }

  private computing(): void {
    if (this.step !== undefined) this.doing(`computing step ${this.step}`);
  }

  /** The links as a role uses them during a step sent for membership `generation`. */
  io(generation: number): HostIO {
    return {
      allReduce: (data, wire) => this.allReduce(data, generation, wire),
      reduceScatter: (data, wire) => this.allReduce(data, generation, wire, "reduceScatter"),
      allGather: (data) => this.allReduce(data, generation, undefined, "allGather"),
      shardOf: (length) => shardBounds(length, this.place.size, this.place.position),
      overlap: () => this.overlap(generation),
      receive: this.receive,
      send: this.send,
      servers: this.servers,
    };
  }

  /** Settles what a thread message answers; false if the message is not about links. */
  settle(m: CommToCompute): boolean {
    switch (m.kind) {
      case "allReduced":
      case "allReduceFailed": {
        if (this.reduce?.seq !== m.seq) return true;
        const p = this.reduce;
        this.reduce = null;
        if (m.kind === "allReduced") {
          this.computing();
          // Without data, the sum is in the shared memory the request's resolver reads.
          p.resolve({ data: m.data ?? new Float32Array(0), stats: m.stats });
        } else p.reject(fromWireError(m.error));
        return true;
      }
      case "nativeRing": {
        this.native?.fail(new CollectiveError("the ring was re-formed"));
        const plane = nativeDataPlane();
        if (!plane.ok) throw new ProtocolError(`the communication thread connected a native ring, but this thread cannot run it: ${plane.reason}`);
        this.native = new NativeRing(plane.addon, m.ring);
        return true;
      }
      case "nativeRingFailed":
        this.native?.fail(fromWireError(m.error));
        this.native = null;
        return true;
      case "ringPlace":
        // A ring formed again (the links configured anew, as timing both data planes does) counts
        // its all-reduces from 0 on every member: its new links know no earlier number.
        this.place = { position: m.position, size: m.size };
        this.reduceSeq = 0;
        return true;
      case "generation":
        // A new membership is a new ring, counting its all-reduces from 0 on every member
        // (a joiner has done none; survivors may have started different numbers before the loss).
        this.generation = m.n;
        this.reduceSeq = 0;
        return true;
      case "pipeTensor":
        this.deliver(`${m.frameKind}/${m.step}/${m.micro}`, m.data);
        return true;
      case "pipeFailed":
        this.failPipe(fromWireError(m.error));
        return true;
      case "psPulled":
      case "psPushed":
      case "psFailed": {
        const p = this.psPending.get(m.seq);
        if (!p) return true;
        this.psPending.delete(m.seq);
        if (m.kind === "psFailed") p.reject(fromWireError(m.error));
        else {
          this.computing();
          p.resolve(m);
        }
        return true;
      }
      default:
        return false;
    }
  }

  /**
   * A new model, or the end of a session: nothing in flight belongs to what comes next. The
   * all-reduce count goes back to 0 only with the session or a ring formed again: a ring kept
   * from one fit to the next expects it to go on growing.
   */
  reset(reason: string, o: { sessionEnded: boolean }): void {
    this.failPipe(new CollectiveError(reason));
    this.inbox.clear();
    this.probeArrays.clear();
    this.pipeFailure = null;
    if (o.sessionEnded) this.reduceSeq = 0;
    this.resets++;
    if (this.reduce) {
      this.reduce.reject(new CollectiveError(reason));
      this.reduce = null;
    }
    for (const p of this.psPending.values()) p.reject(new CollectiveError(reason));
    this.psPending.clear();
  }

  /**
   * Times all-reduces of zeros of each size on the ring as it is wired, `repeats` each; every
   * member runs the same ones in the same order (the driver asks all of them). With each one's
   * time, what it cost this process's CPU, where it can read that.
   */
  async probeRing(sizes: readonly number[], repeats: number, keep = false): Promise<{ ms: number[][]; cpuMs?: number[][] }> {
    const ms: number[][] = [];
    const cpuMs: number[][] = [];
    for (const n of sizes) {
      const times: number[] = [];
      const cpu: number[] = [];
      let buffer: Float32Array = (keep ? this.probeArrays.get(n) : undefined) ?? new Float32Array(n);
      for (let i = 0; i < repeats; i++) {
        const [t0, c0] = [performance.now(), processCpuMs()];
        buffer = (await this.allReduce(buffer, this.generation)).data;
        const c1 = processCpuMs();
        times.push(performance.now() - t0);
        if (c0 !== undefined && c1 !== undefined) cpu.push(c1 - c0);
        buffer.fill(0);
      }
      if (keep) this.probeArrays.set(n, buffer);
      ms.push(times);
      cpuMs.push(cpu);
    }
    return cpuMs.every((c) => c.length === repeats) ? { ms, cpuMs } : { ms };
  }

  private allReduce(data: Float32Array, generation: number, wire?: WireFormat, phases: RingPhases = "both"): Promise<Reduced> {
    if (generation !== this.generation) return Promise.reject(new CollectiveError(`an all-reduce of membership ${generation} after the workers were re-formed as membership ${this.generation}: dropped`));
    const seq = this.reduceSeq++;
    this.doing(`the all-reduce of step ${this.step ?? "?"}`, "waiting");
    if (this.native) {
      const ring = this.native;
      return this.queued(() => ring.run(data, seq, this.stepTimeoutMs, wire, phases)).then((stats) => {
        this.computing();
        return { data, stats };
      });
    }
    const resets = this.resets;
    return this.queued(
      () =>
        new Promise<Reduced>((resolve, reject) => {
          if (resets !== this.resets) throw new CollectiveError(`all-reduce ${seq} was queued before the links were reset: dropped`);
          if (generation !== this.generation) throw new CollectiveError(`an all-reduce of membership ${generation} after the workers were re-formed as membership ${this.generation}: dropped`);
          const o = { seq, generation, ...(wire ? { wire } : {}), ...(phases !== "both" ? { phases } : {}) };
          if (!this.exchange) {
            this.reduce = { seq, resolve, reject };
            this.post({ kind: "allReduce", data, ...o }, [data.buffer as ArrayBuffer]);
            return;
          }
          const shared = this.exchange.view(data.length);
          shared.set(data);
          const back = (r: Reduced): void => {
            data.set(shared);
            resolve({ data, stats: r.stats });
          };
          this.reduce = { seq, resolve: back, reject };
          this.post({ kind: "allReduce", exchange: data.length, ...o });
        }),
    );
  }

  /** The native ring's all-reduces chained, each part after the one before, every one numbered as allReduce numbers them. */
  private overlap(generation: number): OverlapRing | null {
    const ring = this.native;
    if (!ring || generation !== this.generation) return null;
    const parts: Array<Promise<AllReduceStats>> = [];
    return {
      start: (part, wire) => {
        const seq = this.reduceSeq++;
        parts.push(this.queued(() => ring.run(part, seq, this.stepTimeoutMs, wire)));
      },
      done: async () => {
        this.doing(`the all-reduce of step ${this.step ?? "?"}`, "waiting");
        const all = await Promise.all(parts);
        this.computing();
        return all;
      },
    };
  }

  /** `run` once every collective started before it has settled. */
  private queued<T>(run: () => Promise<T>): Promise<T> {
    const p = this.tail.then(run);
    // Handled here, so a failed collective never goes unobserved; its caller's promise reports it.
    this.tail = p.catch(() => undefined);
    return p;
  }

  private deliver(key: string, data: Float32Array): void {
    const box = this.inbox.get(key);
    if (box?.take) {
      this.inbox.delete(key);
      box.take(data);
    } else this.inbox.set(key, { data });
  }

  private failPipe(err: unknown): void {
    this.pipeFailure = err;
    for (const [key, box] of this.inbox) {
      if (box.fail) {
        this.inbox.delete(key);
        box.fail(err);
      }
    }
  }

  /** A neighbour's tensor for a micro-batch: at once if it arrived, else when it does. */
  private receive = (kind: "activation" | "gradient", step: number, micro: number): Promise<Float32Array> => {
    const key = `${kind}/${step}/${micro}`;
    const box = this.inbox.get(key);
    if (box?.data) {
      this.inbox.delete(key);
      return Promise.resolve(box.data);
    }
    if (this.pipeFailure) return Promise.reject(this.pipeFailure);
    const from = kind === "activation" ? "the previous stage" : "the next stage";
    const timeoutMs = this.stepTimeoutMs;
    this.doing(`the ${kind} of micro-batch ${micro} of step ${step} from ${from}`, "waiting");
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.inbox.delete(key);
        reject(new TimeoutError(`waited ${timeoutMs} ms for the ${kind} of micro-batch ${micro} of step ${step} from ${from}`, {
          details: { step, waitingFor: `${kind} of micro-batch ${micro} from ${from}` },
        }));
      }, timeoutMs);
      this.inbox.set(key, {
        take: (d) => {
          clearTimeout(timer);
          this.computing();
          resolve(d);
        },
        fail: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  };

  private send = (to: "prev" | "next", kind: "activation" | "gradient", step: number, micro: number, data: Float32Array): void => {
    this.post({ kind: "pipeSend", to, frameKind: kind, step, micro, data }, [data.buffer as ArrayBuffer]);
  };

  /** The worker's side of the parameter servers, through the communication thread, which holds the links. */
  private readonly servers: ServerLinks = {
    pull: (minVersion) =>
      this.psRequest({ kind: "psPull", seq: this.psSeq++, minVersion }, []).then((m) => {
        const r = m as Extract<CommToCompute, { kind: "psPulled" }>;
        return { shards: r.shards, versions: r.versions, waitedMs: r.waitedMs };
      }),
    push: (clock, pulled, shards, wires, learningRate, standIn) =>
      this.psRequest({ kind: "psPush", seq: this.psSeq++, clock, pulled, shards, ...(wires ? { wires } : {}), ...(learningRate !== undefined ? { learningRate } : {}), ...(standIn !== undefined ? { standIn } : {}) }, transferList(shards.map((data) => ({ data, shape: [data.length] })))).then((m) => {
        const r = m as Extract<CommToCompute, { kind: "psPushed" }>;
        return { versions: r.versions, staleness: r.staleness };
      }),
  };

  private psRequest(m: Extract<ComputeToComm, { kind: "psPull" | "psPush" }>, transfer: ArrayBuffer[]): Promise<CommToCompute> {
    this.doing(m.kind === "psPull" ? `the pull of the parameters for step ${this.step ?? "?"}` : `the push of step ${this.step ?? "?"}`, "waiting");
    return new Promise((resolve, reject) => {
      this.psPending.set(m.seq, { resolve, reject });
      this.post(m, transfer);
    });
  }
}
