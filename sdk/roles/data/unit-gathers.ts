import type { NativeBackend } from "../../backends/native/backend";
import type { HostIO } from "../role";
import type { StepCollectives } from "./step-collectives";
import { named, room, type Unit } from "./shard-unit";

/**
 * ZeRO-3's gathers: a unit's weights all-gathered into a buffer its variables then view, before
 * its forward and again before its backward pass. With overlap there are two buffers, and inside
 * a step the next unit's gather (up the layers in the forward pass, down in the backward) runs
 * into the other while this one computes (as FSDP's forward and backward prefetch): one unit
 * more held, in exchange for not waiting on each gather. The collectives run in the order they
 * were started, the same on every replica.
 */
export class UnitGathers {
  /** The unit whose weights the variables hold now (-1: none; the shard changed since). */
  private gathered = -1;
  private slot = 0;
  private ahead: { k: number; slot: number; done: Promise<Float32Array> } | null = null;
  private readonly memory: ArrayBuffer[];

  constructor(
    private readonly backend: NativeBackend,
    private readonly units: readonly Unit[],
    /** Writes this replica's part of a unit's weights into the buffer, at the unit's `start`. */
    private readonly own: (u: Unit, into: Float32Array) => void,
    /** Values in the largest unit: what each buffer holds. */
    private readonly largest: number,
    private readonly record: StepCollectives,
    overlap: boolean,
  ) {
    this.memory = Array.from({ length: overlap ? 2 : 1 }, () => new ArrayBuffer(largest * 4));
  }

  /** What the variables view until their unit is first gathered (the whole weights they held are let go). */
  placeholder(): Float32Array {
    return new Float32Array(this.memory[0]!);
  }

  /** The shard changed (an update): every unit is gathered anew when next needed. */
  stale(): void {
    this.gathered = -1;
  }

  /** Unit `k`'s weights into its variables; `ahead` (+1 forward, -1 backward, inside a step) starts the next unit's gather too. */
  async gather(k: number, io: HostIO, ahead = 0): Promise<void> {
    if (this.gathered !== k) {
      const ready = this.ahead?.k === k ? this.ahead : null;
      this.ahead = null;
      const slot = ready ? ready.slot : (this.slot + 1) % this.memory.length;
      const whole = ready
        ? await this.record.awaiting(ready.done)
        : await this.allGather(this.units[k]!, io, slot, false);
      for (const { v, at } of this.units[k]!.vars) this.backend.rebind(v, whole.subarray(at, at + v.size));
      this.gathered = k;
      this.slot = slot;
    }
    const next = k + ahead;
    if (ahead === 0 || this.memory.length < 2 || this.ahead || next < 0 || next >= this.units.length) return;
    const slot = (this.slot + 1) % this.memory.length;
    const done = this.allGather(this.units[next]!, io, slot, true);
    // Observed here, so a failed gather started ahead is never unhandled; awaiting it reports it.
    done.catch(() => undefined);
    this.ahead = { k: next, slot, done };
  }

  /** Every replica's part of unit `u`'s weights, whole, in buffer `slot` (valid until that buffer's next gather). */
  private async allGather(u: Unit, io: HostIO, slot: number, ahead: boolean): Promise<Float32Array> {
    const buf = new Float32Array(room(this.memory[slot]!, this.largest), 0, u.length);
    this.own(u, buf);
    // Through the communication thread the buffer's memory moves there and back: the views of the unit gathered before go with it.
    const start = this.record.now();
    const ag = await io.allGather(buf);
    if (ahead) this.record.ranAhead(ag.stats, named("all-gather", u), start);
    else this.record.waited(ag.stats, named("all-gather", u), start);
    this.memory[slot] = ag.data.buffer as ArrayBuffer;
    return ag.data;
  }
}
