import { StateError } from "../../errors/errors";
import type { LoadedReplica } from "../../compute/loaded-replica";
import type { OptimizerState, UpdateRule } from "../../compute/tfjs-update";
import { assignFlat, readConcat } from "../../compute/device-io";

/**
 * What an elastic replica of synchronous data parallelism needs to step back one update: a
 * worker may be one update ahead of another when a peer died between their all-reduces
 * finishing. Counts the steps taken since the load (dropped ones too: every replica drops them
 * alike) and keeps the state before the last, in elastic fits only.
 */
export class StepBack {
  private applied = 0;
  private before: { weights: Float32Array; model: Float32Array; state: OptimizerState } | null = null;

  constructor(
    private readonly r: LoadedReplica,
    private readonly update: UpdateRule,
    private readonly keep: boolean,
  ) {}

  get taken(): number {
    return this.applied;
  }

  /** Before a step's update (or its drop) is applied: the state to go back to. */
  async taking(model: Float32Array): Promise<void> {
    if (this.keep)
      this.before = { weights: await readConcat(this.r.vars), model, state: await this.update.exportState() };
    this.applied++;
  }

  /** Goes back to `to` steps taken: the count now, or one less. */
  async rewind(to: number): Promise<number> {
    if (to === this.applied) return this.applied;
    if (to !== this.applied - 1 || !this.before) {
      throw new StateError(
        `cannot go back from ${this.applied} applied steps to ${to}: only the state before the last update is kept`,
      );
    }
    assignFlat(this.r.vars, this.before.weights);
    this.r.state.set(this.before.model);
    await this.update.importState(this.before.state);
    this.before = null;
    this.applied = to;
    return this.applied;
  }
}
