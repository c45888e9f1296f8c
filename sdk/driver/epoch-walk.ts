import { epochOrder, globalBatch, stepsPerEpoch } from "../plan/batches";

/** One global batch of a fit: its step (counted across epochs), its epoch, the epoch's order, and [start, end) in that order. */
export interface BatchAt {
  step: number;
  epoch: number;
  order: Uint32Array | null;
  start: number;
  end: number;
  /** Under a learning-rate schedule: the step's rate, which its messages carry. */
  learningRate?: number;
}

/**
 * The batches of a fit, in the order model.fit takes them: each epoch's seeded order (made once
 * per epoch), cut into global batches. The one place every loop (data, elastic, pipeline,
 * parameter servers) and the progress display get their steps from.
 */
export class EpochWalk {
  readonly perEpoch: number;
  /** One past the last step: epochs x steps per epoch. */
  readonly total: number;
  /** The first step a fit takes: the first of its initialEpoch (model.fit's), 0 without one. */
  readonly first: number;
  /** Orders of the epochs in use: a loop that steps back (elastic) may need the one before. */
  private readonly orders = new Map<number, Uint32Array | null>();

  constructor(
    private readonly size: number,
    private readonly o: { epochs: number; batchSize: number; shuffle: boolean; seed: number; initialEpoch?: number },
  ) {
    this.perEpoch = stepsPerEpoch(size, o.batchSize);
    this.total = o.epochs * this.perEpoch;
    this.first = (o.initialEpoch ?? 0) * this.perEpoch;
  }

  at(step: number): BatchAt {
    const epoch = Math.floor(step / this.perEpoch);
    const [start, end] = globalBatch(this.size, this.o.batchSize, step % this.perEpoch);
    return { step, epoch, order: this.orderOf(epoch), start, end };
  }

  /** Every step from `from` (a resumed fit's first) or the initial epoch's first, whichever is later, to the last. */
  *steps(from = 0): IterableIterator<BatchAt> {
    for (let step = Math.max(from, this.first); step < this.total; step++) yield this.at(step);
  }

  private orderOf(epoch: number): Uint32Array | null {
    if (!this.orders.has(epoch)) {
      this.orders.set(epoch, epochOrder(this.size, this.o.shuffle, this.o.seed, epoch));
      this.orders.delete(epoch - 2);
    }
    return this.orders.get(epoch)!;
  }
}
