import * as os from "node:os";
import type { Worker } from "node:worker_threads";
import { CollectiveError, ProtocolError, StateError, TimeoutError } from "../errors/errors";
import type { Message } from "../protocol/messages";
import { fromWireError, toWireError } from "../protocol/wire-error";
import { DataReplica } from "../strategies/data/worker-runtime";
import { StageRuntime } from "../strategies/pipeline/stage-runtime";
import { ParamServer } from "../strategies/ps/server-runtime";
import { PsReplica, type ServerLinks } from "../strategies/ps/worker-runtime";
import { wallClock } from "../util/clock";
import type { Draft } from "../transport/channel";
import type { Tensorlike } from "../protocol/tensor";
import { loadSource } from "../data/index";
import type { Dataset } from "../data/dataset";
import { epochOrder } from "../plan/batches";
import { selectBackend, type BackendReport } from "./backend";
import { calibrate } from "./calibrate";
import { transferList, type CommToCompute, type ComputeToComm } from "./bridge";
import { weightsDigest } from "./model-io";
import { VERSION } from "../version";

interface PendingReduce {
  seq: number;
  resolve(r: { data: Float32Array; stats: { waitMs: number; commMs: number; bytesSent: number } }): void;
  reject(err: unknown): void;
}

/**
 * The compute side of a worker (the process's main thread, where TF.js runs). Requests are
 * served one at a time in arrival order; the communication thread handles everything else.
 */
export class ComputeHost {
  private queue: Promise<void> = Promise.resolve();
  private replica: DataReplica | null = null;
  private stage: StageRuntime | null = null;
  /** Strategy "ps": this process as a parameter server, or as a worker of one. */
  private server: ParamServer | null = null;
  private psReplica: PsReplica | null = null;
  private readonly psPending = new Map<number, { resolve(m: CommToCompute): void; reject(err: unknown): void }>();
  private psSeq = 0;
  /** Elastic training: the current membership; steps sent for an earlier one are refused unrun. */
  private generation = 0;
  private stepTimeoutMs = 600_000;
  /** Pipeline tensors from neighbouring stages, by "kind/step/micro": arrived, or awaited. */
  private readonly inbox = new Map<string, { data?: Float32Array; take?: (d: Float32Array) => void; fail?: (e: unknown) => void }>();
  private pipeFailure: unknown = null;
  /** The worker's own copy of the data (feed "workers"), and each epoch's order. */
  private shard: { dataset: Dataset; shuffle: boolean; seed: number; epoch: number; order: Uint32Array | null } | null = null;
  private backend: BackendReport | null = null;
  /** The memory limit the driver asked this worker to enforce, if any. */
  private memoryCapBytes: number | null = null;
  private reduce: PendingReduce | null = null;
  private reduceSeq = 0;
  /** Bumped when a session ends, so work queued for the old session is dropped. */
  private epoch = 0;

  constructor(private readonly comm: Worker) {}

  handle(m: CommToCompute): void {
    switch (m.kind) {
      case "request": {
        // A parameter server answers pulls and pushes at once, between queued requests: a
        // sync pull may wait for pushes that arrive after it.
        if (m.msg.type === "pull" || m.msg.type === "push") {
          this.servePs(m.msg, m.attachments, m.via);
          return;
        }
        const epoch = this.epoch;
        this.queue = this.queue.then(() => (epoch === this.epoch ? this.serve(m.msg, m.attachments) : undefined));
        return;
      }
      case "allReduced":
        if (this.reduce?.seq === m.seq) {
          const p = this.reduce;
          this.reduce = null;
          p.resolve({ data: m.data, stats: m.stats });
        }
        return;
      case "allReduceFailed":
        if (this.reduce?.seq === m.seq) {
          const p = this.reduce;
          this.reduce = null;
          p.reject(fromWireError(m.error));
        }
        return;
      case "generation":
        // A new membership is a new ring, counting its all-reduces from 0 on every member
        // (a joiner has done none; survivors may have started different numbers before the loss).
        this.generation = m.n;
        this.reduceSeq = 0;
        return;
      case "sessionEnded":
        this.endSession(m.reason);
        return;
      case "pipeTensor": {
        const key = `${m.frameKind}/${m.step}/${m.micro}`;
        const box = this.inbox.get(key);
        if (box?.take) {
          this.inbox.delete(key);
          box.take(m.data);
        } else this.inbox.set(key, { data: m.data });
        return;
      }
      case "pipeFailed":
        this.failPipe(fromWireError(m.error));
        return;
      case "psPulled":
      case "psPushed":
      case "psFailed": {
        const p = this.psPending.get(m.seq);
        if (!p) return;
        this.psPending.delete(m.seq);
        if (m.kind === "psFailed") p.reject(fromWireError(m.error));
        else p.resolve(m);
        return;
      }
      case "listening":
      case "exit":
        return;
    }
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
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.inbox.delete(key);
        reject(new TimeoutError(`waited ${this.stepTimeoutMs} ms for the ${kind} of micro-batch ${micro} of step ${step} from ${from}`, {
          details: { step, waitingFor: `${kind} of micro-batch ${micro} from ${from}` },
        }));
      }, this.stepTimeoutMs);
      this.inbox.set(key, {
        take: (d) => {
          clearTimeout(timer);
          resolve(d);
        },
        fail: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  };

  private servePs(msg: Message, attachments: Tensorlike[], via: number | undefined): void {
    const id = (msg as { id?: number }).id;
    const fail = (err: unknown): void => this.post({ kind: "replyError", re: id, error: toWireError(err), via });
    try {
      const server = this.server;
      if (!server) throw new StateError(`"${msg.type}" arrived but this worker holds no parameters`, { hint: "the driver loads the parameter servers before the workers start" });
      if (msg.type === "pull") {
        server.pull(msg.minVersion).then(
          (r) => this.post({ kind: "reply", draft: { type: "pulled", re: msg.id, version: r.version, waitedMs: r.waitedMs }, attachments: [{ data: r.data, shape: [r.data.length] }], via }, [r.data.buffer as ArrayBuffer]),
          fail,
        );
      } else if (msg.type === "push") {
        const grad = attachments[0];
        if (!grad || attachments.length !== 1 || !(grad.data instanceof Float32Array)) throw new ProtocolError(`a push carries ${attachments.length} tensors; expected one float32 gradient`);
        const r = server.push(msg.rank, msg.clock, msg.pulled, grad.data);
        this.post({ kind: "reply", draft: { type: "pushed", re: msg.id, version: r.version, staleness: r.staleness }, attachments: [], via });
      }
    } catch (err) {
      fail(err);
    }
  }

  /** The worker's side of the servers, through the communication thread, which holds the links. */
  private serverLinks: ServerLinks = {
    pull: (minVersion) =>
      this.psRequest({ kind: "psPull", seq: this.psSeq++, minVersion }, []).then((m) => {
        const r = m as Extract<CommToCompute, { kind: "psPulled" }>;
        return { shards: r.shards, versions: r.versions, waitedMs: r.waitedMs };
      }),
    push: (clock, pulled, shards) =>
      this.psRequest({ kind: "psPush", seq: this.psSeq++, clock, pulled, shards }, shards.map((s) => s.buffer as ArrayBuffer)).then((m) => {
        const r = m as Extract<CommToCompute, { kind: "psPushed" }>;
        return { versions: r.versions, staleness: r.staleness };
      }),
  };

  private psRequest(m: Extract<ComputeToComm, { kind: "psPull" | "psPush" }>, transfer: ArrayBuffer[]): Promise<CommToCompute> {
    return new Promise((resolve, reject) => {
      this.psPending.set(m.seq, { resolve, reject });
      this.post(m, transfer);
    });
  }

  private dropPs(reason: string): void {
    this.server?.dispose();
    this.server = null;
    this.psReplica?.dispose();
    this.psReplica = null;
    for (const p of this.psPending.values()) p.reject(new CollectiveError(reason));
    this.psPending.clear();
  }

  private pipeSend = (to: "prev" | "next", kind: "activation" | "gradient", step: number, micro: number, data: Float32Array): void => {
    this.post({ kind: "pipeSend", to, frameKind: kind, step, micro, data }, [data.buffer as ArrayBuffer]);
  };

  private endSession(reason: string): void {
    this.epoch++;
    this.failPipe(new CollectiveError(`session ended: ${reason}`));
    this.inbox.clear();
    this.pipeFailure = null;
    this.stage?.dispose();
    this.stage = null;
    this.reduceSeq = 0;
    if (this.reduce) {
      this.reduce.reject(new CollectiveError(`session ended: ${reason}`));
      this.reduce = null;
    }
    this.replica?.dispose();
    this.replica = null;
    this.shard = null;
    this.dropPs(`session ended: ${reason}`);
  }

  /** This replica's slice of a step, read from the worker's own copy of the dataset. */
  private readSlice(epoch: number, start: number, end: number): { x: Tensorlike; y: Tensorlike } {
    const s = this.shard;
    if (!s) throw new StateError("a step named a range of the dataset, but no dataset was loaded on this worker");
    if (end > s.dataset.size || start > end) throw new ProtocolError(`step range [${start}, ${end}) is outside the dataset of ${s.dataset.size} samples`);
    if (s.epoch !== epoch) {
      s.order = epochOrder(s.dataset.size, s.shuffle, s.seed, epoch);
      s.epoch = epoch;
    }
    return s.dataset.gather(s.order, start, end);
  }

  private post(m: ComputeToComm, transfer: ArrayBuffer[] = []): void {
    this.comm.postMessage(m, transfer);
  }

  private reply(draft: Draft, attachments: Tensorlike[] = []): void {
    this.post({ kind: "reply", draft, attachments }, transferList(attachments));
  }

  /** An all-reduce for a step sent for membership `generation`: refused at once if the workers have been re-formed since. */
  private allReduceFor = (generation: number) => (data: Float32Array): Promise<{ data: Float32Array; stats: { waitMs: number; commMs: number; bytesSent: number } }> => {
    if (generation !== this.generation) return Promise.reject(new CollectiveError(`an all-reduce of membership ${generation} after the workers were re-formed as membership ${this.generation}: dropped`));
    return this.allReduce(data, generation);
  };

  private allReduce = (data: Float32Array, generation = this.generation): Promise<{ data: Float32Array; stats: { waitMs: number; commMs: number; bytesSent: number } }> => {
    const seq = this.reduceSeq++;
    return new Promise((resolve, reject) => {
      this.reduce = { seq, resolve, reject };
      this.post({ kind: "allReduce", seq, data, generation }, [data.buffer as ArrayBuffer]);
    });
  };

  private needReplica(what: string): DataReplica {
    if (!this.replica) throw new StateError(`"${what}" arrived but no model is loaded on this worker`, { hint: "the driver sends load first" });
    return this.replica;
  }

  private async serve(msg: Message, attachments: Tensorlike[]): Promise<void> {
    const id = (msg as { id?: number }).id;
    try {
      switch (msg.type) {
        case "join": {
          this.backend = await selectBackend(msg.backend, msg.threads === 0 ? os.availableParallelism() : msg.threads);
          this.memoryCapBytes = msg.memoryCapBytes ?? null;
          const speed = calibrate();
          this.reply({
            type: "joined",
            re: msg.id,
            info: {
              pid: process.pid,
              hostname: os.hostname(),
              version: VERSION,
              node: process.version,
              backend: this.backend.backend,
              device: this.backend.device,
              memoryBytes: this.memoryCapBytes === null ? this.backend.memoryBytes : Math.min(this.memoryCapBytes, this.backend.memoryBytes),
              cpus: os.availableParallelism(),
              gflops: speed.gflops,
              kernelOverheadUs: speed.kernelOverheadUs,
              notes: this.backend.notes,
            },
            clock: wallClock(),
          });
          return;
        }
        case "load": {
          if (!this.backend) throw new StateError('"load" arrived before "join"');
          this.replica?.dispose();
          this.replica = null;
          this.stage?.dispose();
          this.stage = null;
          this.inbox.clear();
          this.pipeFailure = null;
          this.dropPs("a new model was loaded");
          this.stepTimeoutMs = msg.stepTimeoutMs ?? this.stepTimeoutMs;
          if (msg.ps?.role === "server") {
            this.server = ParamServer.load(msg, attachments, this.stepTimeoutMs);
            this.reply({ type: "loaded", re: msg.id, paramCount: this.server.length, gradientLength: this.server.length });
            return;
          }
          if (msg.ps?.role === "worker") {
            this.psReplica = await PsReplica.load(msg, attachments, this.memoryCapBytes);
            this.reply({ type: "loaded", re: msg.id, paramCount: this.psReplica.paramCount, gradientLength: this.psReplica.gradientLength });
            return;
          }
          if (msg.stage) {
            this.stage = await StageRuntime.load(msg, attachments, this.memoryCapBytes);
            this.reply({ type: "loaded", re: msg.id, paramCount: this.stage.paramCount, gradientLength: this.stage.gradientLength });
            return;
          }
          this.replica = await DataReplica.load(msg, attachments, this.memoryCapBytes);
          this.shard = null;
          if (msg.data) {
            const dataset = loadSource(msg.data.source);
            this.shard = { dataset, shuffle: msg.data.shuffle, seed: msg.data.seed, epoch: -1, order: null };
          }
          this.reply({
            type: "loaded",
            re: msg.id,
            paramCount: this.replica.paramCount,
            gradientLength: this.replica.gradientLength,
            ...(this.shard ? { datasetSize: this.shard.dataset.size } : {}),
          });
          return;
        }
        case "step": {
          if (msg.generation !== undefined && msg.generation !== this.generation) {
            throw new CollectiveError(`step ${msg.step} was sent for membership ${msg.generation}; the workers have been re-formed as membership ${this.generation}, so it was dropped unrun`);
          }
          if (this.psReplica) {
            const [x, y] = attachments;
            if (!x || !y) throw new ProtocolError(`"step" ${msg.step} carries ${attachments.length} tensors, expected x and y`);
            const r = await this.psReplica.step(msg, x, y, this.serverLinks);
            this.reply({ type: "stepDone", re: msg.id, step: msg.step, ...r });
            return;
          }
          if (this.stage) {
            const r = await this.stage.step(msg, attachments, { receive: this.receive, send: this.pipeSend, allReduce: this.allReduce });
            this.reply({ type: "stepDone", re: msg.id, step: msg.step, ...r });
            return;
          }
          const replica = this.needReplica("step");
          const [x, y] = msg.range ? Object.values(this.readSlice(msg.epoch, msg.range.start, msg.range.end)) : attachments;
          if (!x || !y) throw new ProtocolError(`"step" ${msg.step} carries ${attachments.length} tensors, expected x and y`);
          const r = await replica.step(msg.weight, x, y, this.allReduceFor(msg.generation ?? this.generation));
          this.reply({ type: "stepDone", re: msg.id, step: msg.step, ...r });
          return;
        }
        case "fetchWeights": {
          if (this.server) {
            const values = this.server.values();
            const weights = [{ data: values, shape: [values.length] }];
            this.reply({ type: "weights", re: msg.id, digest: weightsDigest(weights), version: this.server.version }, weights);
            return;
          }
          const weights = (this.stage ?? this.psReplica ?? this.needReplica("fetchWeights")).weights();
          this.reply({ type: "weights", re: msg.id, digest: weightsDigest(weights) }, weights);
          return;
        }
        case "probe": {
          this.reply({ type: "probed", re: msg.id, clock: wallClock() });
          return;
        }
        case "digest": {
          this.reply({ type: "digestReply", re: msg.id, digest: weightsDigest((this.stage ?? this.psReplica ?? this.needReplica("digest")).weights()) });
          return;
        }
        case "rewind": {
          const replica = this.needReplica("rewind");
          const applied = msg.to === undefined ? replica.appliedSteps : await replica.rewind(msg.to);
          this.reply({ type: "rewound", re: msg.id, applied });
          return;
        }
        case "fetchState": {
          const state = await (this.server ?? this.stage ?? this.needReplica("fetchState")).exportState();
          const tensors = state.tensors.map((t) => ({ data: t.data, shape: t.shape }));
          this.reply({ type: "state", re: msg.id, format: state.format, names: state.tensors.map((t) => t.name), scalars: state.scalars }, tensors);
          return;
        }
        case "setState": {
          if (attachments.length !== msg.names.length) throw new ProtocolError(`"setState" names ${msg.names.length} tensors and carries ${attachments.length}`);
          const tensors = attachments.map((a, i) => {
            if (!(a.data instanceof Float32Array)) throw new ProtocolError(`optimizer state tensor ${msg.names[i]} is not float32`);
            return { name: msg.names[i]!, data: a.data, shape: [...a.shape] };
          });
          await (this.server ?? this.stage ?? this.needReplica("setState")).importState({ format: msg.format, tensors, scalars: msg.scalars });
          this.reply({ type: "stateSet", re: msg.id });
          return;
        }
        case "applied": {
          const server = this.server;
          if (!server) throw new StateError('"applied" arrived but this worker is not a parameter server');
          this.reply({ type: "appliedReply", re: msg.id, applied: msg.pushes.map((p) => server.wasApplied(p.rank, p.clock)), version: server.version });
          return;
        }
        case "release": {
          this.dropPs("released");
          this.replica?.dispose();
          this.replica = null;
          this.stage?.dispose();
          this.stage = null;
          this.reply({ type: "released", re: msg.id });
          return;
        }
        default:
          throw new ProtocolError(`the compute thread does not serve "${msg.type}"`);
      }
    } catch (err) {
      this.post({ kind: "replyError", re: id, error: toWireError(err) });
    }
  }
}
