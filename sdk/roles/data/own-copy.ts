import type { Dataset } from "../../data/dataset";
import { loadSource } from "../../data/index";
import type { LoadOf } from "../../protocol/messages";
import { ProtocolError } from "../../errors/errors";
import { epochOrder } from "../../plan/batches";
import type { TensorData, Tensorlike } from "../../protocol/tensor";

/**
 * The worker's own copy of the dataset (feed "workers", between-graph replication): each step
 * names a range of the epoch's order, which the worker orders exactly as the driver would.
 */
export class OwnCopy {
  private epoch = -1;
  private order: Uint32Array | null = null;
  /**
   * The arrays each step's slice is copied into, one per column, reused step after step: a
   * fresh 100 KiB batch a step outlived V8's young generation, and some 40 MiB of them built up
   * before a full collection freed any (the demo CNN's peak, 2 workers).
   */
  private readonly rooms: Array<TensorData | undefined> = [];

  private constructor(
    readonly dataset: Dataset,
    private readonly shuffle: boolean,
    private readonly seed: number,
  ) {}

  static of(data: NonNullable<LoadOf<"replica">["data"]>): OwnCopy {
    return new OwnCopy(loadSource(data.source), data.shuffle, data.seed);
  }

  /** Positions [start, end) of epoch `epoch`'s order: the model's inputs and targets, valid until the next slice. */
  slice(epoch: number, start: number, end: number): { x: Tensorlike[]; y: Tensorlike[] } {
    if (end > this.dataset.size || start > end)
      throw new ProtocolError(`step range [${start}, ${end}) is outside the dataset of ${this.dataset.size} samples`);
    if (this.epoch !== epoch) {
      this.order = epochOrder(this.dataset.size, this.shuffle, this.seed, epoch);
      this.epoch = epoch;
    }
    const b = this.dataset.gather(this.order, start, end, this.rooms);
    return { x: b.xs, y: b.ys };
  }
}
