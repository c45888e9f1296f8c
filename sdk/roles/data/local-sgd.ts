import type { OptimizerSpec } from "../../protocol/optimizer-spec";
import { makeUpdateRule } from "../../compute/update-rule";
import type { OptimizerState, UpdateRule } from "../../compute/tfjs-update";
import { assignFlat, readConcat } from "../../compute/device-io";
import { addInPlace, scaleInPlace } from "../../compute/slice-gradient";
import { type LoadedReplica } from "../../compute/loaded-replica";
import type { AllReduceStats } from "../../collectives/ring-allreduce";
import { hasNonFinite } from "../../backends/native/finite";
import { StateError } from "../../errors/errors";
import { nonFiniteVariable, type NonFinite } from "../../compute/step-health";
import { SyncMarks, splitOuter, withOuter } from "./sync-marks";

/** How a replica sums a buffer with every other's and what it makes of the sum (see DataReplica). */
export interface SyncParts {
  sum(change: Float32Array): Promise<{ data: Float32Array; stats: AllReduceStats }>;
  /** Where a compressed sum overflowed its format, if it did. */
  overflowed(sum: Float32Array): NonFinite | undefined;
  /** The sum was applied (true) or dropped: compression's carried state follows. */
  kept(kept: boolean): void;
  names: readonly string[];
  sizes: readonly number[];
}

/**
 * Local SGD and DiLoCo (Douillard et al. 2023) on one replica. Between syncs the replica steps
 * its own copy with the model's optimizer (the inner one) on its own slices. At a sync the
 * replicas all-reduce how far each one's weights moved from the last sync's (weighted by its
 * share of the batches since), and the outer optimizer takes that sum as its gradient, applied
 * to the last sync's weights: every replica ends the sync with the same weights. The inner
 * optimizer's state stays each replica's own, as in DiLoCo.
 *
 * Model state (BatchNormalization's moving statistics) is averaged the same way, by its change.
 */
export class LocalRounds {
  /** This replica's shares of the global batches since the last sync, summed, and their count. */
  private shares = 0;
  private steps = 0;
  /** Steps taken since the load (an elastic fit counts where it can go back to in these). */
  private taken = 0;
  /** Room to read the weights into at a sync, kept between syncs (45 MB for the 11.4M MLP). */
  private now: Float32Array | null = null;
  private spare: Float32Array | null = null;

  private constructor(
    private readonly r: LoadedReplica,
    private readonly outer: UpdateRule,
    /** The weights and model state every replica held at the last sync. */
    private readonly anchor: Float32Array,
    private stateAnchor: Float32Array,
    /** An elastic fit's: the state at the last two syncs, to go back to when a worker is lost. */
    private readonly marks: SyncMarks | null,
  ) {}

  /** `inner` (the replica's own optimizer) is given in an elastic fit, whose syncs are kept to go back to. */
  static async start(r: LoadedReplica, outerSpec: OptimizerSpec, inner: UpdateRule | null): Promise<LocalRounds> {
    const outer = makeUpdateRule(r.vars, outerSpec);
    const local = new LocalRounds(
      r,
      outer,
      await readConcat(r.vars),
      await r.state.snapshot(),
      inner ? new SyncMarks(inner, outer) : null,
    );
    await local.marks?.mark(0, local.anchor, local.stateAnchor);
    // The sync's two buffers made and written here: a fit's first sync would otherwise fault in their
    // fresh pages (the 11.4M MLP, 2 workers over loopback: 230 ms against 120 for a later sync; 150
    // with them made here).
    local.now = new Float32Array(local.anchor.length).fill(0);
    local.spare = new Float32Array(local.anchor.length + local.stateAnchor.length + 1).fill(0);
    return local;
  }

  /** A step taken alone, whose slice was this share of its global batch. */
  took(share: number): void {
    this.shares += share;
    this.steps++;
    this.taken++;
  }

  get stepsTaken(): number {
    return this.taken;
  }

  /**
   * Back to a sync (an elastic fit lost a worker): the last one, or the one before, named by
   * the steps taken then. Weights, model state and both optimizers as they were right after it.
   */
  async back(to: number | "last"): Promise<number> {
    if (!this.marks) throw new StateError("only an elastic fit keeps its syncs to go back to");
    const m = this.marks.at(to);
    await this.marks.restore(m);
    assignFlat(this.r.vars, m.weights.slice());
    this.anchor.set(m.weights);
    this.stateAnchor = m.model.slice();
    this.r.state.set(this.stateAnchor);
    this.shares = this.steps = 0;
    this.taken = m.taken;
    return this.taken;
  }

  /** For a worker joining at a sync: the inner optimizer's state and the outer's. */
  async exportState(inner: OptimizerState): Promise<OptimizerState> {
    return withOuter(inner, await this.outer.exportState());
  }

  /** A joining worker's: the outer part for the outer optimizer, the inner part for `importInner`; then the sync it joins at is the one kept. */
  async importState(state: OptimizerState, importInner: (inner: OptimizerState) => Promise<void>): Promise<void> {
    const { inner, outer } = splitOuter(state);
    await this.outer.importState(outer);
    await importInner(inner);
    await this.marks?.mark(this.taken, this.anchor, this.stateAnchor);
  }

  /**
   * The sync: every replica's change summed in [change | state | flag]. A non-finite change
   * (or an overflowed compressed sum) sends every replica back to the last sync alike.
   */
  async sync(p: SyncParts): Promise<{ stats: AllReduceStats; skipped: boolean; nonFinite?: NonFinite }> {
    const length = this.anchor.length + this.stateAnchor.length + 1;
    // The last sync's sum came back in a buffer of this length, ours again: fresh 45 MB page-faults.
    const change = this.spare?.length === length ? this.spare.fill(0) : new Float32Array(length);
    this.spare = null;
    await this.writeChange(change);
    const weights = change.subarray(0, this.anchor.length);
    const own = hasNonFinite(weights)
      ? { where: "gradient" as const, variable: nonFiniteVariable(weights, p.names, p.sizes) ?? "?" }
      : undefined;
    if (own) change[change.length - 1] = 1;
    const reduced = await p.sum(change);
    const overflow = p.overflowed(reduced.data);
    const skipped = reduced.data[reduced.data.length - 1] !== 0 || overflow !== undefined;
    p.kept(!skipped);
    if (skipped) this.revert();
    else await this.apply(reduced.data);
    await this.marks?.mark(this.taken, this.anchor, this.stateAnchor);
    this.spare = reduced.data;
    const nonFinite = own ?? overflow;
    return { stats: reduced.stats, skipped, ...(nonFinite ? { nonFinite } : {}) };
  }

  /**
   * Writes [share x (last sync's weights - now) | share x (state now - last sync's)] into
   * `out`, the share being this replica's mean share of the batches since the last sync: summed
   * over replicas, the mean change (the replicas' shares of each batch add up to one).
   */
  private async writeChange(out: Float32Array): Promise<void> {
    const share = this.steps > 0 ? this.shares / this.steps : 0;
    const n = this.anchor.length;
    // share x (anchor - now) in three passes of the native kernels over a buffer kept between syncs.
    const now = await readConcat(this.r.vars, (this.now ??= new Float32Array(n)));
    const change = out.subarray(0, n);
    change.set(this.anchor);
    scaleInPlace(now, -1);
    addInPlace(change, now);
    scaleInPlace(change, share);
    const state = await this.r.state.snapshot();
    this.r.state.writeChange(this.stateAnchor, share, out.subarray(n, n + state.length), state);
  }

  /** The replicas' summed change: the outer optimizer applies it to the last sync's weights, which it replaces. */
  private async apply(sum: Float32Array): Promise<void> {
    const n = this.anchor.length;
    // A copy: a tensor made from an array keeps that array, which the next steps update in place.
    assignFlat(this.r.vars, this.anchor.slice());
    this.outer.apply(sum.subarray(0, n));
    this.r.state.set(this.stateAnchor, sum.subarray(n, n + this.stateAnchor.length));
    await readConcat(this.r.vars, this.anchor);
    this.stateAnchor = await this.r.state.snapshot();
    this.shares = 0;
    this.steps = 0;
  }

  /** A sync whose sum is dropped (non-finite): every replica goes back to the last sync's weights alike. */
  private revert(): void {
    assignFlat(this.r.vars, this.anchor.slice());
    this.r.state.set(this.stateAnchor);
    this.shares = 0;
    this.steps = 0;
  }

  dispose(): void {
    this.outer.dispose();
  }
}
