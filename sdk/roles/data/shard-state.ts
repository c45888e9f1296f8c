import { CheckpointError, StateError } from "../../errors/errors";
import { flatten, listFlat, readFlat, unflatten, type FlatRanges, type Pieces } from "../../model/flat-state";
import type { OptimizerState, UpdateRule } from "../../compute/tfjs-update";

/**
 * A sharded replica's optimizer state as sharded checkpoints carry it: its slots laid flat over
 * the ranges of the flat parameters it holds (model/flat-state.ts), so that another number of
 * replicas, or another stage of ZeRO, takes its parts back wherever they now fall.
 */
export class ShardState {
  private readonly pieces: Pieces;

  /** `update` holds state for `ranges` in tensors of `pieceLengths` values each (ZeRO-1's parts of variables; ZeRO-2/3's one shard). */
  constructor(
    private readonly update: UpdateRule,
    readonly ranges: FlatRanges,
    pieceLengths: readonly number[],
  ) {
    this.pieces = { shapes: pieceLengths.map((n) => [n]), pieceMajor: true };
  }

  async export(): Promise<OptimizerState> {
    return listFlat(flatten(await this.update.exportState(), this.ranges, this.pieces));
  }

  async import(state: OptimizerState): Promise<void> {
    if (!state.ranges)
      throw new StateError(
        "a sharded replica takes its optimizer state laid flat over the ranges it holds, and this state is whole",
      );
    if (JSON.stringify(state.ranges) !== JSON.stringify(this.ranges)) {
      throw new CheckpointError(
        `the optimizer state sent covers parameters ${JSON.stringify(state.ranges)}; this replica holds ${JSON.stringify(this.ranges)}`,
      );
    }
    await this.update.importState(unflatten(readFlat({ ...state, ranges: state.ranges }), this.pieces));
  }
}
