import type { LoadOf } from "../../protocol/messages";
import { ProtocolError, StateError } from "../../errors/errors";
import type { OptimizerState } from "../../compute/tfjs-update";
import type { MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../protocol/tensor";
import { wallClock } from "../../util/clock";
import { readWeights } from "../../model/model-io";
import type { HostIO, RoleEnv, RoleReply, WorkerRole } from "../role";
import type { Message } from "../../protocol/messages";
import { evaluateShard } from "../data/evaluate-shard";
import { accumulatedSlice } from "../data/accumulate-slices";
import { checkedSliceGradient, slowDown } from "../../compute/slice-gradient";
import { loadReplica, replicaStepReport, slowReport, type LoadedReplica } from "../../compute/loaded-replica";
import type { StepResult } from "../data/step-result";
import { nonFiniteVariable, survivedStepError, type NonFinite } from "../../compute/step-health";
import { ErrorFeedback } from "../../compute/error-feedback";
import { assignFlat, onDevice, transfers } from "../../compute/device-io";
import type { WireFormat } from "../../protocol/wire-formats";
import { feedRows, splitFeed } from "../../compute/objective";
import { hasNonFinite } from "../../backends/native/finite";

export interface PsStepResult extends StepResult {
  ps: { pulled: number[]; staleness: number; pullMs: number; pushMs: number };
}

/**
 * A worker under parameter servers: it holds the whole model but never updates it itself.
 * Each step it pulls every shard (parameters and model state), computes its slice's gradient,
 * and pushes each server the part that server holds: [gradient | weighted change of the state
 * the forward pass made | flag], the flag set when the slice cannot be learned from. With
 * compression, each push's gradient goes as 16-bit floats with error feedback; a gradient value
 * too large for fp16 flags the push instead of sending Infinity to the servers.
 */
export class PsReplica implements WorkerRole {
  /** Where each variable starts in the flat gradient. */
  private readonly offsets: number[];
  /** Where each state tensor starts in the model's flat state, and its size. */
  private readonly stateAt: Array<{ off: number; size: number }>;
  private readonly feedback: ErrorFeedback | null;
  /** Compressed: each server's push, its gradient's values in 16 bits and the rest (state change, flag) in 32. */
  private readonly wires: WireFormat[] | undefined;
  /** The step's flat gradient, and each server's push: kept from step to step (see pushBuffer). */
  private flat: Float32Array | undefined;
  private readonly pushes: Float32Array[] = [];
  /** What this worker's last pull set (its parameters are still those): a lost rank's slice of that step is computed on them. */
  private held: { clock: number; versions: number[]; state: Float32Array } | null = null;
  /** The servers as the last step reached them, and that step's clock: validation pulls the update that step made. */
  private last: { links: HostIO["servers"]; clock: number } | null = null;

  private constructor(
    private readonly r: LoadedReplica,
    /** For each server, the indices of the trainable variables it holds. */
    private readonly shards: number[][],
    /** For each server, the indices of the state tensors it holds. */
    private readonly stateShards: number[][],
    private readonly slowdown: number,
    compression: LoadOf<"ps-worker">["compression"],
    /** Chunks each step's slice is computed in (fit option accumulate); 1: one pass. */
    private readonly accumulate: number,
    private readonly mode: "sync" | "async",
  ) {
    const f = compression ? new ErrorFeedback(compression, r.gradientLength) : null;
    this.feedback = f;
    this.wires = f ? shards.map((indices) => f.wire(indices.reduce((a, i) => a + r.sizes[i]!, 0))) : undefined;
    let off = 0;
    this.offsets = r.sizes.map((size) => (off += size) - size);
    let at = 0;
    this.stateAt = r.state.sizes.map((size) => ({ off: (at += size) - size, size }));
  }

  static async load(
    msg: LoadOf<"ps-worker">,
    weights: Tensorlike[],
    env: Pick<RoleEnv, "memoryCapBytes">,
  ): Promise<PsReplica> {
    const r = await loadReplica(msg, weights, env.memoryCapBytes);
    const { shards, state } = msg;
    const problem =
      coverage(shards, r.vars.length, "trainable variables") ??
      coverage(state, r.state.sizes.length, "state tensors (float non-trainable weights)");
    if (problem !== null || state.length !== shards.length) {
      r.model.dispose();
      throw new ProtocolError(
        problem ?? `the servers' state lists ${state.length} servers; their shards ${shards.length}`,
      );
    }
    return new PsReplica(
      r,
      shards.map((s) => [...s]),
      state.map((s) => [...s]),
      msg.slowdown ?? 1,
      msg.compression,
      msg.accumulate ?? 1,
      msg.mode,
    );
  }

  get paramCount(): number {
    return this.r.model.countParams();
  }

  get gradientLength(): number {
    return this.r.gradientLength;
  }

  get loaded(): WorkerRole["loaded"] {
    return { paramCount: this.paramCount, gradientLength: this.gradientLength, replicaStep: replicaStepReport(this.r) };
  }

  async step(msg: MessageOf<"step">, attachments: Tensorlike[], io: HostIO): Promise<PsStepResult> {
    const feed = splitFeed(this.r.model, attachments);
    if (!feed)
      throw new ProtocolError(
        `"step" ${msg.step} carries ${attachments.length} tensors, expected ${this.r.model.inputs.length} input(s) and ${this.r.model.outputs.length} target(s)`,
      );
    const { x, y } = feed;
    const links = io.servers;
    const clock = msg.ps?.clock ?? msg.step;
    const standIn = msg.ps?.standIn;
    this.last = { links, clock };
    const startedAt = wallClock();
    const t0 = performance.now();
    const { pulled, before, t1 } = await this.parameters(links, clock, msg.ps?.minVersion, standIn);
    const t2 = performance.now();
    const flat = (this.flat ??= new Float32Array(this.r.gradientLength)).fill(0);
    // A flagged push of zeros for a non-finite or failed slice: a sync server waits for every worker.
    const stateNow = new Float32Array(this.r.state.length);
    const extra = stateNow.length > 0 ? { stateNow } : {};
    const slice =
      this.accumulate > 1
        ? await accumulatedSlice(this.r, this.accumulate, x, y, msg.weight, flat, extra)
        : await checkedSliceGradient(this.r, x, y, msg.weight, flat, extra);
    const overflow = slice.nonFinite === undefined && slice.failure === undefined ? this.compress(flat) : undefined;
    const nonFinite = slice.nonFinite ?? overflow;
    const flagged = nonFinite !== undefined || slice.failure !== undefined;
    const change = new Float32Array(before.length);
    if (!flagged && feedRows(x) > 0) this.r.state.writeChange(before, msg.weight, change, stateNow);
    const loss = slice.loss;
    const slowdownMs = await slowDown(this.slowdown, performance.now() - t2);
    const t3 = performance.now();
    const shards = this.split(flat, change, flagged);
    const wires = this.wires;
    const sentBytes = pushedBytes(shards, wires);
    const pushed = await links.push(clock, pulled.versions, shards, wires, msg.learningRate, standIn);
    const t4 = performance.now();
    const waitMs = Math.max(0, ...pulled.waitedMs);
    if (slice.failure !== undefined) throw survivedStepError(slice.failure, msg.step);
    return {
      ...(nonFinite ? { nonFinite } : {}),
      // The servers drop a flagged push: in sync mode with its whole step.
      ...(flagged ? { skipped: true } : {}),
      ...(slice.metrics ? { metrics: slice.metrics } : {}),
      ...slowReport(this.r),
      loss,
      startedAt,
      computeMs: t3 - t2,
      commMs: Math.max(0, t1 - t0 - waitMs) + (t2 - t1) + (t4 - t3),
      waitMs,
      applyMs: 0,
      slowdownMs,
      sentBytes,
      ...(onDevice() ? { readbackMs: transfers.readbackMs, uploadMs: transfers.uploadMs } : {}),
      ps: { pulled: pulled.versions, staleness: Math.max(0, ...pushed.staleness), pullMs: t1 - t0, pushMs: t4 - t3 },
    };
  }

  /**
   * Validation at an epoch's end: the weights and model state the servers hold after the epoch's
   * last update (sync: the version after this worker's last step; async: what they hold, the
   * driver having waited for every push of the epoch), pulled, then the shard evaluated as a
   * data-parallel replica evaluates its own.
   */
  answer(msg: Message, attachments: Tensorlike[] = [], io?: HostIO): Promise<RoleReply> | undefined {
    if (msg.type !== "evaluate") return undefined;
    const feed = splitFeed(this.r.model, attachments);
    if (!feed)
      return Promise.reject(
        new ProtocolError(
          `"evaluate" carries ${attachments.length} tensors, expected ${this.r.model.inputs.length} input(s) and ${this.r.model.outputs.length} target(s)`,
        ),
      );
    const servers = io?.servers ?? this.last?.links;
    if (!servers || (this.mode === "sync" && !this.last))
      return Promise.reject(new StateError("validation before any step: this worker has not reached its servers yet"));
    return servers
      .pull(this.mode === "sync" ? this.last!.clock + 1 : undefined)
      .then((pulled) => this.assign(pulled.shards))
      .then(() => evaluateShard(this.r, feed.x, feed.y, msg.batchSize))
      .then((sums) => ({ draft: { type: "evaluated", re: msg.id, ...sums } }));
  }

  /**
   * The step's parameters in the model: pulled, or (a stand-in) those this worker pulled for its
   * own part of step `clock`, still in its model, the state put back to what was pulled.
   */
  private async parameters(
    links: HostIO["servers"],
    clock: number,
    minVersion: number | undefined,
    standIn: number | undefined,
  ): Promise<{ pulled: { versions: number[]; waitedMs: number[] }; before: Float32Array; t1: number }> {
    if (standIn === undefined) {
      const pulled = await links.pull(minVersion);
      const t1 = performance.now();
      transfers.reset();
      const before = this.assign(pulled.shards);
      this.held = { clock, versions: pulled.versions, state: before };
      return { pulled, before, t1 };
    }
    if (this.held?.clock !== clock)
      throw new StateError(
        `asked to stand in for rank ${standIn} at step ${clock}, but this worker last pulled for step ${this.held?.clock ?? "none"}`,
      );
    const t1 = performance.now();
    transfers.reset();
    this.r.state.set(this.held.state);
    return { pulled: { versions: this.held.versions, waitedMs: [0] }, before: this.held.state, t1 };
  }

  /** Rounds the gradient to 16 bits with error feedback; where a value overflowed, says so (and forgets the residual). */
  private compress(flat: Float32Array): NonFinite | undefined {
    if (!this.feedback) return undefined;
    this.feedback.compress(flat);
    if (!hasNonFinite(flat)) return undefined;
    this.feedback.clear();
    return { where: "compression", variable: nonFiniteVariable(flat, this.r.names, this.r.sizes) ?? "?" };
  }

  /** Writes each server's shard into the model's variables and state; returns the whole state as pulled. */
  private assign(shards: Float32Array[]): Float32Array {
    const state = new Float32Array(this.r.state.length);
    this.shards.forEach((indices, s) => {
      const data = shards[s]!;
      const vars = indices.map((i) => this.r.vars[i]!);
      let off = vars.reduce((n, v) => n + v.size, 0);
      if (off > data.length)
        throw new ProtocolError(`parameter server ${s} sent ${data.length} values; its variables need more`);
      // Each server's variables in one upload.
      assignFlat(vars, data.subarray(0, off));
      for (const i of this.stateShards[s]!) {
        const { off: at, size } = this.stateAt[i]!;
        if (off + size > data.length)
          throw new ProtocolError(
            `parameter server ${s} sent ${data.length} values; its variables and state need more`,
          );
        state.set(data.subarray(off, off + size), at);
        off += size;
      }
      if (off !== data.length)
        throw new ProtocolError(
          `parameter server ${s} sent ${data.length} values; its variables and state hold ${off}`,
        );
    });
    this.r.state.set(state);
    return state;
  }

  /** The flat gradient and state change cut into one push per server: [its gradient | its state's change | flag]. */
  private split(flat: Float32Array, change: Float32Array, flagged: boolean): Float32Array[] {
    return this.shards.map((indices, s) => {
      const states = this.stateShards[s]!;
      const out = this.pushBuffer(
        s,
        indices.reduce((a, i) => a + this.r.sizes[i]!, 0) + states.reduce((a, i) => a + this.stateAt[i]!.size, 0) + 1,
      );
      let at = 0;
      for (const i of indices) {
        out.set(flat.subarray(this.offsets[i]!, this.offsets[i]! + this.r.sizes[i]!), at);
        at += this.r.sizes[i]!;
      }
      for (const i of states) {
        const { off, size } = this.stateAt[i]!;
        out.set(change.subarray(off, off + size), at);
        at += size;
      }
      out[at] = flagged ? 1 : 0;
      return out;
    });
  }

  /**
   * Server `s`'s push, in memory shared with the communication thread, which sends it from there:
   * a step awaits its pushes' acknowledgements, so the next step may write it again. Fresh buffers
   * of a model's size each step, and their page faults, cost the 11.4M MLP's step about a tenth
   * over loopback. Where memory cannot be shared (a tab without cross-origin isolation) each push
   * is its own buffer, handed over.
   */
  private pushBuffer(s: number, length: number): Float32Array {
    if (
      typeof SharedArrayBuffer === "undefined" ||
      (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === false
    )
      return new Float32Array(length);
    if (this.pushes[s]?.length !== length) this.pushes[s] = new Float32Array(new SharedArrayBuffer(4 * length));
    return this.pushes[s]!;
  }

  async weights(): Promise<{ tensors: Tensorlike[] }> {
    return { tensors: await readWeights(this.r.model) };
  }

  exportState(): Promise<OptimizerState> {
    return Promise.reject(noState());
  }

  importState(): Promise<void> {
    return Promise.reject(noState());
  }

  dispose(): void {
    this.r.model.dispose();
    this.r.compileOptimizer.dispose();
  }
}

/** Why `shards` does not hold each of `count` indices exactly once, or null. */
function coverage(shards: number[][], count: number, what: string): string | null {
  const all = shards.flat().sort((a, b) => a - b);
  if (all.length === count && all.every((v, i) => v === i)) return null;
  return `the servers' shards name ${what} [${all.join(", ")}]; this model has ${count}, each held by exactly one server`;
}

function noState(): StateError {
  return new StateError("a parameter-server worker holds no optimizer state: the servers do", {
    hint: "checkpoint the servers",
  });
}

/** Bytes a push sends: each shard's float32 values, or its 16-bit part at 2 bytes a value and the rest at 4. */
function pushedBytes(shards: readonly Float32Array[], wires: readonly WireFormat[] | undefined): number {
  return shards.reduce(
    (n, s, i) => n + 4 * (wires ? Math.ceil(wires[i]!.packed / 2) + s.length - wires[i]!.packed : s.length),
    0,
  );
}
