import type { FlatRanges } from "../../../model/flat-state";
import type { HostIO } from "../../role";
import type { OptimizerState } from "../../../compute/tfjs-update";
import { makeUpdateRule } from "../../../compute/update-rule";
import type { ShardState } from "../shard-state";
import { ZeroOne } from "../zero-one";
import type { ReplicaParts } from "./gradient-sum";
import { SummedStep, type Summed } from "./summed-step";

/**
 * ZeRO stage 1 (see ZeroOne): the gradient reduce-scattered, this replica's shard through the
 * optimizer state it alone keeps, the weights all-gathered. The optimizer's state is the
 * shard's, none for the whole model. It never steps back: an elastic fit that loses a member
 * re-loads every one from a checkpoint.
 */
export class ZeroOneSum extends SummedStep {
  readonly kind = "zero-1";
  private readonly zero: ZeroOne;

  constructor(p: ReplicaParts) {
    super(p, makeUpdateRule([], p.load.optimizer), false);
    this.zero = new ZeroOne(p.r.vars, p.load.optimizer, p.r.names, p.r.sizes);
  }

  protected buckets(): null {
    return null;
  }

  protected sum(flat: Float32Array, _slice: unknown, _buckets: null, io: HostIO): Promise<Summed> {
    return this.zero.sum(flat, this.p.r.gradientLength, io, this.p.hook.wire(this.p.r.gradientLength));
  }

  protected async applySum(gradient: Float32Array, learningRate: number | undefined): Promise<number> {
    await this.zero.apply(gradient, learningRate);
    return this.zero.gatherMs;
  }

  protected reuse(summed: Float32Array): Float32Array {
    return this.zero.takeBuffer() ?? summed;
  }

  private shard(): Promise<ShardState> {
    return this.zero.ready(this.p.io());
  }

  override async exportState(): Promise<OptimizerState> {
    return (await this.shard()).export();
  }

  override async importState(state: OptimizerState): Promise<void> {
    return (await this.shard()).import(state);
  }

  override async stateRanges(): Promise<FlatRanges> {
    return (await this.shard()).ranges;
  }

  override dispose(): void {
    super.dispose();
    this.zero.dispose();
  }
}
