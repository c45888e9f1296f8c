import type { LoadOf } from "../../protocol/messages";
import * as tf from "@tensorflow/tfjs";
import { ProtocolError, StateError, TimeoutError } from "../../errors/errors";
import type { Message, MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../protocol/tensor";
import { makeUpdateRule } from "../../compute/update-rule";
import type { OptimizerState, UpdateRule } from "../../compute/tfjs-update";
import { readConcat } from "../../compute/device-io";
import { bestAccumulate } from "../../collectives/accumulate";
import { unpackValues } from "../../collectives/half-pack";
import type { RoleEnv, RoleReply, StepReport, WorkerRole } from "../role";
import { VersionWaiters } from "./version-waiters";

/**
 * One parameter server's shard: its variables, the optimizer over them, the model state it holds
 * (moving statistics), and the version (the number of updates applied). A push is
 * [gradient | weighted change of the state | flag]. Async: every push is applied when it
 * arrives, its state change added to the state. Sync: the pushes of one step are summed in rank
 * order once all have arrived and applied as one update; the state moves by the sum of the
 * workers' weighted changes (their mean). A push whose flag is set (its slice held or yielded
 * NaN or Infinity, or its computation threw) is dropped in async mode and drops its whole
 * step in sync mode, so no update built from it is ever applied.
 */
export class ParamServer implements WorkerRole {
  readonly waiting = "serving the workers' pulls and pushes";
  private version_ = 0;
  private readonly update: UpdateRule;
  /** Trainable values in the shard. */
  readonly length: number;
  /** Length of a push: gradient, state change, flag. */
  private readonly pushLength: number;
  /** The all-reduce's add (native where built): the sum of a sync step is the same operation. */
  private readonly accumulate = bestAccumulate();
  /** Sync: the pushes of the current step, by rank. */
  private readonly pending = new Map<number, Float32Array>();
  /** Sync mode under a learning-rate schedule: the rate of the step being collected. */
  private stepRate: number | undefined;
  private readonly waiters = new VersionWaiters();
  /** Every applied push, as "rank/clock": what the driver asks after a worker left. */
  private readonly applied = new Set<string>();
  /** The values pulls of `version` are answered with (served()). */
  private snapshot: { version: number; data: Promise<Float32Array> } | null = null;
  /** Sync: the ranks whose pushes make a step, summed in this order (every worker, until a regroup). */
  private members: number[];

  private constructor(
    readonly index: number,
    private readonly vars: tf.Variable[],
    /** The state values it holds, flat, in order: never seen by the optimizer. */
    private readonly state: Float32Array,
    spec: MessageOf<"load">["optimizer"],
    private readonly mode: "async" | "sync",
    private readonly workers: number,
    private readonly stepTimeoutMs: number,
    /** Async under a schedule: each step's rate (see the load's rates). */
    private readonly rates: readonly number[] | null = null,
  ) {
    this.update = makeUpdateRule(vars, spec);
    this.length = vars.reduce((a, v) => a + v.size, 0);
    this.pushLength = this.length + state.length + 1;
    this.members = Array.from({ length: workers }, (_, r) => r);
  }

  static load(ps: LoadOf<"ps-server">, values: Tensorlike[], stepTimeoutMs: number): ParamServer {
    const stateSpec = ps.state;
    if (values.length !== ps.variables.length + stateSpec.length) {
      throw new ProtocolError(
        `parameter server ${ps.index} got ${values.length} tensors for ${ps.variables.length} variables and ${stateSpec.length} state tensors`,
      );
    }
    const checked = (v: { index: number; shape: number[] }, got: Tensorlike, what: string): Float32Array => {
      const size = v.shape.reduce((a, d) => a * d, 1);
      if (got.data.length !== size || !(got.data instanceof Float32Array))
        throw new ProtocolError(
          `${what} ${v.index} has shape [${v.shape.join(", ")}] but ${got.data.length} ${got.data.constructor.name} values came`,
        );
      return got.data;
    };
    const vars = ps.variables.map((v, i) =>
      tf.variable(tf.tensor(checked(v, values[i]!, "variable"), [...v.shape], "float32"), true),
    );
    const parts = stateSpec.map((v, i) => checked(v, values[ps.variables.length + i]!, "state tensor"));
    const state = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
    parts.reduce((off, p) => (state.set(p, off), off + p.length), 0);
    return new ParamServer(ps.index, vars, state, ps.optimizer, ps.mode, ps.workers, stepTimeoutMs, ps.rates ?? null);
  }

  get version(): number {
    return this.version_;
  }

  /** Loaded as a role: the same, with the host's step timeout. */
  static role(
    msg: LoadOf<"ps-server">,
    values: Tensorlike[],
    env: Pick<RoleEnv, "stepTimeoutMs">,
  ): Promise<ParamServer> {
    return Promise.resolve(ParamServer.load(msg, values, env.stepTimeoutMs));
  }

  get loaded(): WorkerRole["loaded"] {
    return { paramCount: this.length, gradientLength: this.length };
  }

  step(msg: MessageOf<"step">): Promise<StepReport> {
    return Promise.reject(
      new ProtocolError(`step ${msg.step} reached a parameter server; servers answer pulls and pushes`),
    );
  }

  /** Pulls and pushes from the workers' links, and the driver's question after a worker left. */
  answer(msg: Message, attachments: Tensorlike[]): Promise<RoleReply> | undefined {
    switch (msg.type) {
      case "pull":
        return this.pull(msg.minVersion).then((r) => ({
          draft: { type: "pulled", re: msg.id, version: r.version, waitedMs: r.waitedMs },
          attachments: [{ data: r.data, shape: [r.data.length] }],
        }));
      case "push": {
        const grad = attachments[0];
        if (!msg.compression && (!grad || attachments.length !== 1 || !(grad.data instanceof Float32Array)))
          return Promise.reject(
            new ProtocolError(`a push carries ${attachments.length} tensors; expected one float32 gradient`),
          );
        try {
          const values = msg.compression
            ? unpackValues(attachments, this.pushLength, { compression: msg.compression, packed: this.length })
            : (grad!.data as Float32Array);
          const r = this.push(msg.rank, msg.clock, msg.pulled, values, msg.learningRate, msg.standIn === true);
          return Promise.resolve({ draft: { type: "pushed", re: msg.id, version: r.version, staleness: r.staleness } });
        } catch (err) {
          return Promise.reject(err);
        }
      }
      case "regroup":
        return Promise.resolve().then(() => {
          this.regroup(msg.members);
          return { draft: { type: "regrouped", re: msg.id, version: this.version_ } };
        });
      case "applied":
        return Promise.resolve({
          draft: {
            type: "appliedReply",
            re: msg.id,
            applied: msg.pushes.map((p) => this.wasApplied(p.rank, p.clock)),
            version: this.version_,
          },
        });
      default:
        return undefined;
    }
  }

  async weights(): Promise<{ tensors: Tensorlike[]; version: number }> {
    const version = this.version_;
    const values = await this.values();
    return { tensors: [{ data: values, shape: [values.length] }], version };
  }

  /** The shard's values now, or (sync) once the version reaches minVersion. */
  pull(minVersion: number | undefined): Promise<{ version: number; data: Float32Array; waitedMs: number }> {
    if (minVersion === undefined || minVersion <= this.version_) {
      const version = this.version_;
      return this.served().then((data) => ({ version, data, waitedMs: 0 }));
    }
    if (this.mode === "async")
      throw new ProtocolError(
        `an async pull asked for version ${minVersion}; async servers serve whatever version they hold`,
      );
    const missing = (): string => this.members.filter((r) => !this.pending.has(r)).join(", ");
    const timedOut = (): TimeoutError =>
      new TimeoutError(
        `parameter server ${this.index} waited ${this.stepTimeoutMs} ms for the pushes of step ${this.version_} from worker rank(s) ${missing()}`,
        {
          details: { waitingFor: `pushes of step ${this.version_} from worker rank(s) ${missing()}` },
          hint: "a sync step waits for every worker; raise .timeouts({ stepMs }) for long steps",
        },
      );
    return this.waiters.wait(minVersion, this.stepTimeoutMs, timedOut).then(async (waitedMs) => {
      const version = this.version_;
      return { version, data: await this.served(), waitedMs };
    });
  }

  /**
   * Accepts a gradient computed on version `pulled`: applied now (async) or with its step's others
   * (sync). A stand-in (another worker's push for a lost rank) this server has had already from
   * that rank is acknowledged and dropped: nothing is applied twice.
   */
  push(
    rank: number,
    clock: number,
    pulled: number,
    grad: Float32Array,
    learningRate?: number,
    standIn = false,
  ): { version: number; staleness: number } {
    if (grad.length !== this.pushLength) {
      throw new ProtocolError(
        `worker rank ${rank} pushed ${grad.length} values to parameter server ${this.index}, which takes ${this.pushLength} (${this.length} gradient, ${this.state.length} state, 1 flag)`,
      );
    }
    if (pulled > this.version_)
      throw new ProtocolError(
        `worker rank ${rank} pushed a gradient computed on version ${pulled}; parameter server ${this.index} is at ${this.version_}`,
      );
    if (this.mode === "async") {
      const staleness = this.version_ - pulled;
      // A flagged push is handled (not handed out again) but changes nothing.
      if (grad[this.pushLength - 1] === 0)
        this.applyOne(
          grad,
          this.rates
            ? this.rates[Math.min(Math.floor(this.version_ / this.workers), this.rates.length - 1)]
            : undefined,
        );
      this.applied.add(`${rank}/${clock}`);
      return { version: this.version_, staleness };
    }
    if (standIn && (this.applied.has(`${rank}/${clock}`) || (clock === this.version_ && this.pending.has(rank))))
      return { version: clock + 1, staleness: 0 };
    if (!this.members.includes(rank))
      throw new ProtocolError(
        `rank ${rank} pushed to a sync server whose steps are made by rank(s) ${this.members.join(", ")}`,
      );
    if (clock !== this.version_)
      throw new ProtocolError(
        `worker rank ${rank} pushed for step ${clock} while parameter server ${this.index} collects step ${this.version_}`,
      );
    if (this.pending.has(rank)) throw new ProtocolError(`worker rank ${rank} pushed twice for step ${clock}`);
    this.pending.set(rank, grad);
    // Every push of a step carries the driver's one rate for it.
    if (learningRate !== undefined) this.stepRate = learningRate;
    if (this.pending.size === this.members.length) this.applyStep(clock);
    return { version: clock + 1, staleness: 0 };
  }

  private applyStep(clock: number): void {
    // Summed in rank order, whatever order they arrived in, so every run adds the same way: into
    // the first member's push, which arrived in an array of its own (a fresh sum would cost a
    // pass and the pages of a model's worth of memory every step).
    const [first, ...rest] = this.members;
    const sum = this.pending.get(first!)!;
    this.applied.add(`${first}/${clock}`);
    for (const r of rest) {
      const g = this.pending.get(r)!;
      this.accumulate(sum, Buffer.from(g.buffer, g.byteOffset, g.byteLength), 0);
      this.applied.add(`${r}/${clock}`);
    }
    this.pending.clear();
    // A flagged step still ends (the version moves on, so every worker's next pull is answered).
    if (sum[this.pushLength - 1] === 0) this.applyOne(sum, this.stepRate);
    else this.version_++;
    this.stepRate = undefined;
    this.waiters.reached(this.version_);
  }

  /** Sync, at a step boundary: the ranks whose pushes make the steps from now on. */
  private regroup(members: readonly number[]): void {
    if (this.mode !== "sync")
      throw new ProtocolError(
        `parameter server ${this.index} is async: it applies each push as it comes, from whoever`,
      );
    if (this.pending.size > 0)
      throw new StateError(
        `parameter server ${this.index} holds ${this.pending.size} push(es) of step ${this.version_}: it regroups between steps`,
      );
    this.members = [...members].sort((a, b) => a - b);
  }

  /** One update: the gradient through the optimizer, the state moved by its change. */
  private applyOne(push: Float32Array, learningRate?: number): void {
    this.update.apply(push.subarray(0, this.length), learningRate);
    const change = push.subarray(this.length, this.length + this.state.length);
    for (let i = 0; i < change.length; i++) this.state[i]! += change[i]!;
    this.version_++;
  }

  /** The optimizer's state and the version, for checkpoints (sync mode resumes at that version). */
  async exportState(): Promise<OptimizerState> {
    const st = await this.update.exportState();
    return { ...st, scalars: { ...st.scalars, version: this.version_ } };
  }

  async importState(state: OptimizerState): Promise<void> {
    await this.update.importState(state);
    this.version_ = state.scalars.version ?? 0;
  }

  wasApplied(rank: number, clock: number): boolean {
    return this.applied.has(`${rank}/${clock}`);
  }

  /**
   * What pulls are answered with: the current version's values, read once and shared by every
   * pull of it (a sync step's N pulls read the model once, not N times), in shared memory that
   * nothing writes to after (the communication thread copies it into frames). Kept until the
   * version moves on. Where there is no shared memory (a tab that is not cross-origin isolated),
   * each pull gets a copy of its own, handed over to the communication thread.
   */
  private served(): Promise<Float32Array> {
    if (typeof SharedArrayBuffer === "undefined") return this.values();
    if (this.snapshot?.version !== this.version_)
      this.snapshot = {
        version: this.version_,
        data: this.values(new SharedArrayBuffer((this.length + this.state.length) * 4)),
      };
    return this.snapshot.data;
  }

  /** The shard's values, flat, in its variables' order, then its state (a copy, in `memory` where given). */
  async values(memory?: SharedArrayBuffer): Promise<Float32Array> {
    const state = this.state.slice();
    const out = memory ? new Float32Array(memory) : new Float32Array(this.length + state.length);
    await readConcat(this.vars, out.subarray(0, this.length));
    out.set(state, this.length);
    return out;
  }

  shapes(): number[][] {
    return this.vars.map((v) => [...v.shape]);
  }

  /** A pull still waiting is answered with why: the shard was loaded again (a fit recovering from a loss) or the session ended. */
  dispose(): void {
    this.waiters.fail(new StateError(`parameter server ${this.index} was loaded again`));
    this.update.dispose();
    tf.dispose(this.vars);
  }
}
