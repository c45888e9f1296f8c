import type { GradIO, Op, OpIO, StepContext } from "../op";

/**
 * A mask as tfjs-layers computes it (1 keeps a position, 0 masks it): Embedding's (maskZero)
 * where an id (as given, before its cast) is not 0, one value per id (cols 1); Masking's where a
 * position's `cols` values are not all maskValue. It has no gradient.
 */
export class MaskOp implements Op {
  readonly outputUnused = true;
  readonly params = [];
  constructor(
    readonly layer: string,
    private readonly cols: number,
    private readonly value: number,
  ) {}
  saved(): number[] {
    return [];
  }
  temps(): number[] {
    return [];
  }
  forward(_ctx: StepContext, io: OpIO): void {
    const x = io.x[0]!;
    const y = io.y[0]!;
    const { cols, value } = this;
    for (let r = 0; r < y.length; r++) {
      let keep = 0;
      for (let k = 0; k < cols; k++) {
        if (x[r * cols + k] !== value) {
          keep = 1;
          break;
        }
      }
      y[r] = keep;
    }
  }
  backward(_ctx: StepContext, io: GradIO): void {
    io.paramsDone();
  }
}
