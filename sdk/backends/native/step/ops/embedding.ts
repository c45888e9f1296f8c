import type { LayerCall, OpBuilder } from "../layer-call";
import { sizeOf, type GradIO, type Op, type OpIO, type ParamSlot, type StepContext } from "../op";

/**
 * Embedding: each id's row of the table. Ids arrive as floats and are truncated to integers,
 * as tfjs-layers casts them; an id outside the table is an error, as tf.gather makes it. The
 * table's gradient is the rows the batch touched, summed (the rest zero, as TF.js's dense
 * gradient of a gather holds it).
 */
export class EmbeddingOp implements Op {
  readonly outputUnused = true;
  readonly params: ParamSlot[];
  private readonly idsPerSample: number;
  constructor(
    readonly layer: string,
    inShape: readonly number[],
    private readonly table: ParamSlot,
    private readonly rows: number,
    private readonly dim: number,
  ) {
    this.params = [table];
    this.idsPerSample = sizeOf(inShape);
  }
  saved(batch: number): number[] {
    // The ids as int32, in a float32 array's bytes.
    return [batch * this.idsPerSample];
  }
  temps(): number[] {
    return [];
  }
  private ids(io: OpIO): Int32Array {
    const s = io.saved[0]!;
    return new Int32Array(s.buffer, s.byteOffset, io.batch * this.idsPerSample);
  }
  forward(ctx: StepContext, io: OpIO): void {
    const ids = this.ids(io);
    const x = io.x[0]!;
    for (let i = 0; i < ids.length; i++) ids[i] = x[i]! | 0;
    for (let i = 0; i < ids.length; i++) {
      if (ids[i]! < 0 || ids[i]! >= this.rows)
        throw new RangeError(`${this.layer}: id ${ids[i]} is not in [0, ${this.rows - 1}]`);
    }
    ctx.addon.gatherRows(ctx.values(this.table.variable), ids, io.y[0]!, ids.length, this.dim, this.rows);
  }
  backward(ctx: StepContext, io: GradIO): void {
    const g = ctx.grad(this.table);
    if (g) {
      if (!g.add) g.view.fill(0);
      const ids = this.ids(io);
      ctx.addon.scatterAddRows(g.view, ids, io.dy[0]!, ids.length, this.dim, this.rows);
    }
    io.paramsDone();
  }
}

export const embedding: OpBuilder = (c: LayerCall) => {
  const table = c.param("embeddings");
  if (!table) return `${c.name} has no table`;
  const [rows, dim] = table.variable.shape as [number, number];
  return new EmbeddingOp(c.name, c.inShapes[0]!, table, rows, dim);
};
