import * as tf from "@tensorflow/tfjs";
import type { NativeBackend } from "../../backends/native/backend";
import type { AllReduceStats } from "../../collectives/ring-allreduce";
import type { OptimizerSpec } from "../../protocol/optimizer-spec";
import type { WireFormat } from "../../protocol/wire-formats";
import { hasNonFinite } from "../../backends/native/finite";
import type { HostIO } from "../role";
import type { NonFinite } from "../../compute/step-health";
import { OptimizerShard, updatesInPlace, writeWeights } from "./optimizer-shard";
import type { ShardState } from "./shard-state";
import { bindViews, type Placed } from "./bound-weights";

/**
 * ZeRO stage 1 (Rajbhandari et al. 2020) for a data-parallel replica. The step's buffer is
 * [gradient | change of state | flag], as for the all-reduce; here the gradient is
 * reduce-scattered (each replica's shard summed in the all-reduce's order, to the same bits),
 * the small rest all-reduced with one more slot for a shard whose compressed sum overflowed, so
 * that every replica knows whether the step is dropped; a kept step updates each replica's
 * shard with its own optimizer state, and the weights are all-gathered in float32.
 */
export class ZeroOne {
  private shard: OptimizerShard | null = null;
  private io: HostIO | null = null;
  private stats: AllReduceStats | null = null;
  /** The buffer the weights were all-gathered in: the next step's, when the step was kept. */
  private gathered: Float32Array | null = null;
  /** The all-gather's ms (counted as communication, not as the update's time). */
  gatherMs = 0;
  /** Updated in place: every weight in one buffer, which the model's variables view (see apply). */
  private weights: Float32Array | null = null;
  private placed: Placed[] | null = null;

  constructor(
    private readonly vars: readonly tf.Variable[],
    private readonly spec: OptimizerSpec,
    private readonly names: readonly string[],
    private readonly sizes: readonly number[],
  ) {
    // Bound now, while the model loads: bound at the first step, the old arrays and the buffer would be held at once, until a collection.
    if (updatesInPlace(spec)) {
      this.placed = placedOf(vars);
      this.weights = bindViews(
        tf.backend() as NativeBackend,
        this.placed,
        new Float32Array(sizes.reduce((a, b) => a + b, 0)),
      );
    }
  }

  /**
   * Sums `flat` (n gradient values, then the rest) as the step needs it: the returned buffer
   * holds this replica's shard of the summed gradient, the summed rest, and a flag that is not
   * zero when any replica flagged its slice or found its shard's compressed sum overflowed.
   */
  async sum(
    flat: Float32Array,
    n: number,
    io: HostIO,
    wire: WireFormat | undefined,
  ): Promise<{ data: Float32Array; stats: AllReduceStats; overflow?: NonFinite }> {
    this.io = io;
    this.gathered = null;
    this.gatherMs = 0;
    // flat may move to the communication thread with the reduce-scatter: its rest is copied first.
    const length = flat.length;
    const rest = new Float32Array(length - n + 1);
    rest.set(flat.subarray(n));
    const rs = await io.reduceScatter(flat.subarray(0, n), wire);
    const [s, e] = io.shardOf(n);
    if (this.shard) this.shard.holds(s, e);
    else await this.ready(io);
    const mine = rs.data.subarray(s, e);
    const overflow =
      wire && rest[rest.length - 2] === 0 && hasNonFinite(mine)
        ? { where: "compression" as const, variable: this.variableAt(s + mine.findIndex((v) => !Number.isFinite(v))) }
        : undefined;
    if (overflow) rest[rest.length - 1] = 1;
    // rest moves to the communication thread too: its length is read first.
    const tail = rest.length;
    const summed = await io.allReduce(rest);
    const data = new Float32Array(rs.data.buffer, 0, length);
    data.set(summed.data.subarray(0, tail - 1), n);
    // An overflow anywhere drops the step everywhere, as a flagged slice does.
    data[length - 1] += summed.data[tail - 1]!;
    this.stats = {
      waitMs: rs.stats.waitMs + summed.stats.waitMs,
      commMs: rs.stats.commMs + summed.stats.commMs,
      bytesSent: rs.stats.bytesSent + summed.stats.bytesSent,
    };
    return { data, stats: this.stats, ...(overflow ? { overflow } : {}) };
  }

  /** This replica's shard, made where the ring places it if no step made it yet (a checkpoint's part is loaded into it first). */
  async ready(io: HostIO): Promise<ShardState> {
    const [s, e] = io.shardOf(this.sizes.reduce((a, b) => a + b, 0));
    this.shard ??= await OptimizerShard.of(this.vars, this.spec, s, e);
    return this.shard.state();
  }

  /** The variable the flat parameter `index` belongs to. */
  private variableAt(index: number): string {
    let off = 0;
    for (let i = 0; i < this.sizes.length; i++) {
      off += this.sizes[i]!;
      if (index < off) return this.names[i]!;
    }
    return "?";
  }

  /**
   * A kept step: this replica's shard through its optimizer, then every replica's new weights
   * gathered into the model. Updated in place (the native backend), the model's variables view
   * one buffer of every weight, gathered into where they are; otherwise the shard's new weights
   * go into the step's buffer, gathered there and copied into the variables.
   */
  async apply(gradient: Float32Array, learningRate?: number): Promise<void> {
    const shard = this.shard!;
    if (shard.inPlace) {
      await shard.step(gradient.subarray(shard.start, shard.end), null, learningRate);
      const b = tf.backend() as NativeBackend;
      // Bound at load (the shard updates in place exactly where the constructor bound them).
      const placed = this.placed!;
      const buf = bindViews(b, placed, this.weights!);
      const ag = await this.io!.allGather(buf);
      // Through the communication thread (WebSocket links) it comes back as another buffer: the variables view that one.
      this.weights = ag.data === buf ? buf : bindViews(b, placed, ag.data, true);
      this.counted(ag.stats);
      return;
    }
    await shard.step(gradient.subarray(shard.start, shard.end), gradient, learningRate);
    const ag = await this.io!.allGather(gradient);
    writeWeights(this.vars, ag.data);
    this.counted(ag.stats);
    this.gathered = ag.data;
  }

  /** The all-gather's time, as communication. */
  private counted(ag: AllReduceStats): void {
    this.gatherMs = ag.waitMs + ag.commMs;
    const st = this.stats!;
    st.waitMs += ag.waitMs;
    st.commMs += ag.commMs;
    st.bytesSent += ag.bytesSent;
  }

  /** The buffer to reuse next step, where the all-gather handed one back (it holds the weights, copied into the model already). */
  takeBuffer(): Float32Array | null {
    const b = this.gathered;
    this.gathered = null;
    // A view of the step's whole buffer: [gradient | rest] as the next step fills it.
    return b ? new Float32Array(b.buffer) : null;
  }

  dispose(): void {
    this.shard?.dispose();
  }
}

/** Each variable's place in the flat parameters. */
function placedOf(vars: readonly tf.Variable[]): Placed[] {
  let at = 0;
  return vars.map((v) => ({ v, at: (at += v.size) - v.size }));
}
