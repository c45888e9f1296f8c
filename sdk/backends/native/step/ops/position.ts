import type { LayerCall, OpBuilder } from "../layer-call";
import type { GradIO, Op, OpIO, ParamSlot, StepContext } from "../op";

/** meshtrain's PositionEmbedding: the table's first T rows for every sample; its gradient sums them over the batch. Its input gets none (only its shape is read). */
export class PositionOp implements Op {
  readonly outputUnused = true;
  readonly params: ParamSlot[];
  constructor(
    readonly layer: string,
    private readonly table: ParamSlot,
    private readonly rows: number,
  ) {
    this.params = [table];
  }
  saved(): number[] {
    return [];
  }
  temps(): number[] {
    return [];
  }
  forward(ctx: StepContext, io: OpIO): void {
    const t = ctx.values(this.table.variable).subarray(0, this.rows);
    for (let b = 0; b < io.batch; b++) io.y[0]!.set(t, b * this.rows);
  }
  backward(ctx: StepContext, io: GradIO): void {
    const g = ctx.grad(this.table);
    if (g) {
      const dy = io.dy[0]!;
      const view = g.view;
      if (!g.add) view.fill(0);
      for (let b = 0; b < io.batch; b++) ctx.addon.accumulate(view, dy.subarray(b * this.rows, (b + 1) * this.rows), 0);
    }
    io.paramsDone();
    const dx = io.dx[0];
    if (dx && !io.addDx[0]) dx.fill(0);
  }
}

export const position: OpBuilder = (c: LayerCall) => {
  const table = c.param("embeddings");
  if (!table) return `${c.name} is not built`;
  const [T, d] = c.inShapes[0]! as [number, number];
  if (T > table.variable.shape[0]!)
    return `${c.name}: a sequence of ${T} is longer than its sequenceLength ${table.variable.shape[0]}`;
  return new PositionOp(c.name, table, T * d);
};
