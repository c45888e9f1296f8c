import type { Worker } from "node:worker_threads";
import { CollectiveError, ProtocolError, StateError } from "../errors/errors";
import type { Message, MessageOf } from "../protocol/messages";
import type { Tensorlike } from "../protocol/tensor";
import { toWireError } from "../protocol/wire-error";
import type { Draft } from "../transport/channel";
import { wallClock } from "../util/clock";
import type { BackendReport } from "../backends/select-backend";
import { transferList, type CommToCompute, type ComputeToComm } from "./bridge";
import { HostLinks } from "./host-links";
import { joinWorker } from "./join-session";
import { profileModel } from "../roles/profiler";
import { weightsDigest } from "../model/weights-digest";
import { makeRole, type RoleReply, type RoleTable, type WorkerRole } from "../roles/role";
import { MemoryWatch } from "./memory-watch";
import { processCpuMs } from "../util/cpu-time";
import { setStateOf, stateOf } from "./host-state";

/**
 * The compute side of a worker (the process's main thread, where TF.js runs). Requests from the
 * driver are served one at a time in arrival order; requests from peers (pulls and pushes to a
 * parameter server) are answered at once, since a sync pull may wait for pushes queued after
 * it. What the worker does with a loaded model is its role, made by the factory the load
 * message names; the host serves what every role shares and knows none of them by name.
 */
export class ComputeHost {
  private queue: Promise<void> = Promise.resolve();
  private role: WorkerRole | null = null;
  private backend: BackendReport | null = null;
  /** The memory limit the driver asked this worker to enforce, if any. */
  private memoryCapBytes: number | null = null;
  /** The loaded model's fit: its peak memory, reported when the driver releases it. */
  private readonly memory = new MemoryWatch(() => this.collectCommGarbage());
  /** Who waits for the communication thread's garbage collection, in the order asked. */
  private garbageWaiters: Array<() => void> = [];
  private readonly links: HostLinks;
  /** Bumped when a session ends, so work queued for the old session is dropped. */
  private epoch = 0;
  /** This process's CPU time when it last answered a probe: the next answer says what the probe between cost it. */
  private probedAtCpuMs = 0;

  constructor(
    private readonly comm: Worker,
    private readonly roles: RoleTable,
  ) {
    this.links = new HostLinks((m, transfer) => this.post(m, transfer));
  }

  handle(m: CommToCompute): void {
    if (this.links.settle(m)) return;
    switch (m.kind) {
      case "request": {
        if (m.via !== undefined) {
          this.answerPeer(m.msg, m.attachments, m.via);
          return;
        }
        const epoch = this.epoch;
        this.queue = this.queue.then(() => (epoch === this.epoch ? this.serve(m.msg, m.attachments) : undefined));
        return;
      }
      case "garbageCollected":
        this.garbageWaiters.shift()?.();
        return;
      case "sessionEnded":
        this.epoch++;
        this.drop(`session ended: ${m.reason}`, true);
        return;
      default:
        return;
    }
  }

  /** A request on a peer's link to this worker: only the role answers those. */
  private answerPeer(msg: Message, attachments: Tensorlike[], via: number): void {
    const id = (msg as { id?: number }).id;
    const fail = (err: unknown): void => this.post({ kind: "replyError", re: id, error: toWireError(err), via });
    try {
      const answer = this.role?.answer?.(msg, attachments);
      if (!answer)
        throw new StateError(`"${msg.type}" arrived from a peer but this worker's role does not answer it`, {
          hint: "the driver loads the parameter servers before the workers start",
        });
      answer.then((r) => this.replyVia(r, via), fail);
    } catch (err) {
      fail(err);
    }
  }

  private drop(reason: string, sessionEnded = false): void {
    this.links.reset(reason, { sessionEnded });
    this.role?.dispose();
    this.role = null;
    this.post({ kind: "holding", model: false });
  }

  /** Resolves once the communication thread has collected its garbage, or after 2 s: a memory reading is not worth a stall. */
  private collectCommGarbage(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.garbageWaiters = this.garbageWaiters.filter((w) => w !== done);
        resolve();
      };
      const timer = setTimeout(done, 2000);
      this.garbageWaiters.push(done);
      this.post({ kind: "collectGarbage" });
    });
  }

  private post(m: ComputeToComm, transfer: ArrayBuffer[] = []): void {
    this.comm.postMessage(m, transfer);
  }

  private reply(draft: Draft, attachments: Tensorlike[] = []): void {
    this.post({ kind: "reply", draft, attachments }, transferList(attachments));
  }

  private replyVia(r: RoleReply, via: number): void {
    const attachments = r.attachments ?? [];
    this.post({ kind: "reply", draft: r.draft, attachments, via }, transferList(attachments));
  }

  private need(what: string): WorkerRole {
    if (!this.role)
      throw new StateError(`"${what}" arrived but no model is loaded on this worker`, {
        hint: "the driver sends load first",
      });
    return this.role;
  }

  private async load(msg: MessageOf<"load">, attachments: Tensorlike[]): Promise<void> {
    if (!this.backend) throw new StateError('"load" arrived before "join"');
    this.drop("a new model was loaded");
    this.links.stepTimeoutMs = msg.stepTimeoutMs;
    this.links.doing("loading the model");
    await this.memory.start(attachments.reduce((sum, a) => sum + a.data.byteLength, 0));
    this.role = await makeRole(this.roles, msg.role, msg, attachments, {
      memoryCapBytes: this.memoryCapBytes,
      stepTimeoutMs: this.links.stepTimeoutMs,
      io: () => this.links.io(this.links.generation),
    });
    this.post({ kind: "holding", model: true });
    // The weights sent are the model's now, or (ZeRO-3) let go: this list must not keep them past the load's settling.
    attachments.length = 0;
    await this.memory.loaded();
    this.reply({ type: "loaded", re: msg.id, ...this.role.loaded });
    this.links.doing(this.role.waiting ?? "model loaded, waiting for a step", "idle");
  }

  private async step(msg: MessageOf<"step">, attachments: Tensorlike[]): Promise<void> {
    const generation = this.links.generation;
    if (msg.generation !== undefined && msg.generation !== generation) {
      throw new CollectiveError(
        `step ${msg.step} was sent for membership ${msg.generation}; the workers have been re-formed as membership ${generation}, so it was dropped unrun`,
      );
    }
    const role = this.need("step");
    this.links.step = msg.step;
    this.links.doing(`computing step ${msg.step}`);
    const r = await role
      .step(msg, attachments, this.links.io(msg.generation ?? generation))
      .then(
        (done) => (this.links.doing(`step ${msg.step} done, waiting for the next`, "idle"), done),
        (err: unknown) => {
          // The stall report shows it: a replica whose step failed while the others wait in a collective is why they wait.
          this.links.doing(
            `step ${msg.step} failed: ${(err instanceof Error ? err.message : String(err)).split("\n")[0]}`,
            "failed",
          );
          throw err;
        },
      )
      .finally(() => (this.links.step = undefined));
    this.memory.stepDone();
    this.reply({ type: "stepDone", re: msg.id, step: msg.step, ...r });
    // Transferred, so every view of it here is detached: a role that did keep one would read nothing, not the next batch.
    if (role.freesStepInputs) {
      const buffers = transferList(attachments);
      this.post({ kind: "recycle", buffers }, buffers);
    }
  }

  /** What plans predict from: the driver's link, the data ring's all-reduce, the model's layers and step. */
  private async measure(msg: MessageOf<"probe" | "ringProbe" | "profile">): Promise<void> {
    switch (msg.type) {
      case "probe": {
        const cpuMs = processCpuMs();
        const since = cpuMs === undefined ? undefined : cpuMs - this.probedAtCpuMs;
        this.probedAtCpuMs = cpuMs ?? 0;
        return this.reply({
          type: "probed",
          re: msg.id,
          clock: wallClock(),
          ...(since !== undefined ? { cpuMs: since } : {}),
        });
      }
      case "ringProbe":
        this.links.doing("timing the data ring's all-reduce for the plan");
        this.reply({
          type: "ringProbed",
          re: msg.id,
          ...(await this.links.probeRing(msg.elements, msg.repeats, msg.keep === true)),
        });
        return this.links.doing("timed the data ring, waiting", "idle");
      case "profile":
        this.links.doing(
          msg.sharedForMs !== undefined
            ? "timing its step beside the other workers on this machine"
            : "timing the model's layers for the plan",
        );
        this.reply({ type: "profiled", re: msg.id, ...(await profileModel(msg, this.memoryCapBytes)) });
        return this.links.doing("profiled the model, waiting", "idle");
    }
  }

  private async serve(msg: Message, attachments: Tensorlike[]): Promise<void> {
    try {
      await this.dispatch(msg, attachments);
    } catch (err) {
      this.post({ kind: "replyError", re: (msg as { id?: number }).id, error: toWireError(err) });
    }
  }

  private async dispatch(msg: Message, attachments: Tensorlike[]): Promise<void> {
    switch (msg.type) {
      case "join":
        return this.join(msg);
      case "load":
        return this.load(msg, attachments);
      case "step":
        return this.step(msg, attachments);
      case "fetchWeights": {
        const w = await this.need("fetchWeights").weights();
        const version = w.version !== undefined ? { version: w.version } : {};
        return this.reply({ type: "weights", re: msg.id, digest: weightsDigest(w.tensors), ...version }, w.tensors);
      }
      case "digest": {
        const digest = weightsDigest((await this.need("digest").weights()).tensors);
        return this.reply({ type: "digestReply", re: msg.id, digest });
      }
      case "probe":
      case "ringProbe":
      case "profile":
        return this.measure(msg);
      case "fetchState": {
        const s = await stateOf(this.need("fetchState"), msg);
        return this.reply(s.draft, s.tensors);
      }
      case "setState":
        await setStateOf(this.need("setState"), msg, attachments);
        return this.reply({ type: "stateSet", re: msg.id });
      case "setShard":
        return this.setShard(msg, attachments);
      case "release":
        return this.release(msg);
      default: {
        const answer = this.role?.answer?.(msg, attachments, this.links.io(this.links.generation));
        if (!answer)
          throw new ProtocolError(
            `the compute thread does not serve "${msg.type}"${this.role ? " for this worker's role" : " without a loaded model"}`,
          );
        const r = await answer;
        this.reply(r.draft, r.attachments ?? []);
      }
    }
  }

  private async join(msg: MessageOf<"join">): Promise<void> {
    const j = await joinWorker(msg);
    this.backend = j.backend;
    this.memoryCapBytes = msg.memoryCapBytes ?? null;
    this.reply({ type: "joined", re: msg.id, info: j.info, clock: wallClock() });
  }

  private release(msg: MessageOf<"release">): void {
    const dataBytes = this.role?.loaded.dataBytes;
    const memory = this.role
      ? { ...this.memory.report(), ...(dataBytes !== undefined ? { dataBytes } : {}) }
      : undefined;
    this.drop("released");
    this.links.doing("the fit is over", "idle");
    this.reply({ type: "released", re: msg.id, ...(memory ? { memory } : {}) });
    // After the reply (the driver need not wait for it), before whatever the driver asks next.
    this.memory.released();
  }

  /** A ZeRO-3 replica loaded in parts takes its part of the weights: that finishes its load, so the fit's peak starts after it. */
  private async setShard(msg: MessageOf<"setShard">, attachments: Tensorlike[]): Promise<void> {
    const answer = this.role?.answer?.(msg, attachments, this.links.io(this.links.generation));
    if (!answer) throw new StateError('"setShard" arrived before a ZeRO-3 replica was loaded');
    const r = await answer;
    attachments.length = 0;
    await this.memory.loaded();
    this.reply(r.draft);
  }
}
