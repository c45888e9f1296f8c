import type { HostIO } from "../role";
import type { CommHook } from "./hooks/comm-hook";
import type { StepCollectives } from "./step-collectives";
import { named, room, type Unit } from "./shard-unit";

/**
 * ZeRO-2 and -3's reduce-scatters: the backward pass writes a unit's gradients into a buffer the
 * size of the largest unit, reduce-scattered once the unit is complete, each replica adding its
 * part of the sum into its shard's gradient. With overlap there are two buffers: a unit's
 * reduce-scatter runs while the backward pass computes the next unit into the other, and is
 * awaited only before that buffer is written again, or at the pass's end.
 */
export class UnitReduces {
  private slot = 0;
  private pending: Float32Array | null = null;
  private readonly memory: ArrayBuffer[];
  private readonly running: Array<Promise<void> | null>;

  constructor(
    /** The summed gradient of the replica's shard, as the reduce-scatters leave it. */
    private readonly gradient: Float32Array,
    /** Values in the largest unit. */
    private readonly largest: number,
    private readonly hook: CommHook,
    private readonly record: StepCollectives,
    overlap: boolean,
  ) {
    this.memory = Array.from({ length: overlap ? 2 : 1 }, () => new ArrayBuffer(largest * 4));
    this.running = this.memory.map(() => null);
  }

  /** The buffer unit `u`'s layers write their gradients into: zeroed when the backward pass reaches its last layer (`first`). */
  scratch(u: Unit, first: boolean): { grads: Float32Array; base: number } {
    if (!first) return { grads: this.pending!, base: u.from };
    this.slot = (this.slot + 1) % this.memory.length;
    this.pending = new Float32Array(room(this.memory[this.slot]!, this.largest), 0, u.length);
    this.pending.fill(0);
    return { grads: this.pending, base: u.from };
  }

  /** Unit `u` complete: its gradient reduce-scattered, this replica's part set into (`adding`: added to) the shard's. */
  async reduce(u: Unit, io: HostIO, adding: boolean): Promise<void> {
    const slot = this.slot;
    const data = this.pending!;
    this.pending = null;
    this.hook.round(data, u.from);
    const start = this.record.now();
    const ahead = this.memory.length > 1;
    const done = io.reduceScatter(data, this.hook.wire(u.length)).then((rs) => {
      if (ahead) this.record.ranAhead(rs.stats, named("reduce-scatter", u), start);
      else this.record.waited(rs.stats, named("reduce-scatter", u), start);
      const mine = rs.data.subarray(u.start, u.end);
      if (adding) for (let i = 0; i < mine.length; i++) this.gradient[u.kept + i]! += mine[i]!;
      else this.gradient.set(mine, u.kept);
      this.memory[slot] = rs.data.buffer as ArrayBuffer;
    });
    if (!ahead) return done;
    done.catch(() => undefined);
    this.running[slot] = done;
    // The other buffer is written next: its reduce-scatter must be done.
    await this.settle((slot + 1) % this.memory.length);
  }

  /** Every reduce-scatter still running, done: the shard's gradient is whole. */
  async finish(): Promise<void> {
    for (let s = 0; s < this.running.length; s++) await this.settle(s);
  }

  /** Before a pass: whatever a failed step left running has settled, so no buffer is written under it. */
  async drain(): Promise<void> {
    for (const p of this.running) await p?.catch(() => undefined);
    this.running.fill(null);
  }

  private async settle(slot: number): Promise<void> {
    const p = this.running[slot];
    if (!p) return;
    this.running[slot] = null;
    await this.record.awaiting(p);
  }
}
