import type * as tf from "@tensorflow/tfjs";
import type { LossName } from "../../../protocol/loss-names";
import type { Tensorlike } from "../../../protocol/tensor";
import type { NativeBackend } from "../backend";
import type { NativeMemory } from "../../../plan/memory";
import { arrayBytes, StepArrays } from "./arrays";
import { compileProgram, type Program, type Schedule, type ScheduledOp } from "./compile";
import { labelsPerRow } from "./loss";
import { gradIO, sizeOf, type OpIO, type ParamSlot, type StepContext } from "./op";
import { applyPenalty } from "./regularizers";
import { headLosses, type StepObjective } from "./heads";
import { layerOrder, minOffset } from "./units";

export type { StepObjective } from "./heads";

/** A model's native step, or why it trains by TF.js's autodiff. */
export type StepChoice = { native: NativeStep; why?: undefined } | { native: null; why: string };

/** A slice's inputs or targets: one tensor per model input (output). */
type Feed = Tensorlike | readonly Tensorlike[];

/** What a step returns: the loss (the heads' weighted sum plus the weights' penalties), each head's mean loss, and the outputs (valid until the next call). */
export interface StepOutcome {
  loss: number;
  each: number[];
  outs: Float32Array[];
  /** The first output. */
  out: Float32Array;
}

/**
 * What a ZeRO-3 step does around each op that holds trainable variables (a unit): gather its
 * weights before its forward and its backward (the hook knows whether they are still there),
 * give it a buffer for its gradients, and take them once written. Every replica calls these in
 * the same order, since each is one side of a collective.
 */
export interface UnitHooks {
  /** `pass`: the forward pass goes up the layers, the backward down (a hook may gather the next unit ahead). */
  gather(op: number, pass: "forward" | "backward"): Promise<void>;
  /** The buffer op's gradients are written into, and where it starts in the flat gradient. */
  gradients(op: number): { grads: Float32Array; base: number };
  reduced(op: number): Promise<void>;
}

function list(f: Feed): readonly Tensorlike[] {
  return Array.isArray(f) ? (f as readonly Tensorlike[]) : [f as Tensorlike];
}

function floats(t: Tensorlike): Float32Array {
  return t.data instanceof Float32Array ? t.data : Float32Array.from(t.data);
}

/**
 * The replica step of a compiled model: forward, losses and backward by meshtrain's native
 * kernels over the model's whole layer graph (branches, merges, several inputs and outputs,
 * nested models inlined), on arrays planned once, with no TF.js tensor made and no autodiff
 * tape. Each gradient is written straight into the flat buffer the all-reduce sends. Equal to
 * TF.js's gradient up to float32 rounding (test/unit/native-step*.test.ts).
 */
export class NativeStep {
  private readonly arrays = new StepArrays();
  private readonly ctx: StepContext;
  /** The flat gradient ops write into, and where it starts (ZeRO-3: one unit's buffer). */
  private target: { grads: Float32Array; base: number } = { grads: new Float32Array(0), base: 0 };
  /** Trained weights whose gradient this backward pass has written (the next writer adds). */
  private readonly written = new Set<tf.Variable>();
  private readonly inOrder: boolean;
  /** Per layer, the ms its forward and backward passes took, while timing is on (`timeOps`). */
  private timing: Map<string, { forward: number; backward: number }> | null = null;

  private constructor(
    backend: NativeBackend,
    private readonly program: Program,
    private readonly first: Schedule,
    private readonly objective: StepObjective,
    private readonly eps: number,
  ) {
    const self = this;
    this.ctx = {
      addon: backend.addon,
      columns: (n) => backend.scratch(n),
      values: (v) => backend.values(v),
      grad(slot: ParamSlot) {
        if (slot.offset === null) return null;
        const at = slot.offset - self.target.base;
        const add = self.written.has(slot.variable);
        self.written.add(slot.variable);
        return { view: self.target.grads.subarray(at, at + slot.variable.size), add };
      },
    };
    this.inOrder = layerOrder(first);
  }

  /** The model's native step, or why it has none (it then trains by TF.js's autodiff). */
  static compile(
    backend: NativeBackend,
    model: tf.LayersModel,
    objective: StepObjective | LossName,
    vars: readonly tf.Variable[],
  ): StepChoice {
    const o: StepObjective = typeof objective === "string" ? { heads: [{ loss: objective, weight: 1 }] } : objective;
    const program = compileProgram(model, vars);
    if (typeof program === "string") return { native: null, why: program };
    const first = program.schedule(
      program.graph.inputs.map((t) => program.graph.shapes[t]!.slice(1).map((d) => d ?? 2)),
    );
    if (typeof first === "string") return { native: null, why: first };
    if (o.heads.length !== first.outputs.length)
      return { native: null, why: `the model has ${first.outputs.length} outputs and ${o.heads.length} losses` };
    if (o.classWeight && (o.heads.length !== 1 || first.outShapes[0]!.length !== 1))
      return { native: null, why: "classWeight weighs the rows of one output of one axis" };
    return { native: new NativeStep(backend, program, first, o, Math.fround(backend.epsilon())) };
  }

  /** The shape of one sample of the model's first input (a length left open reads 2). */
  get inputShape(): readonly number[] {
    return this.program.graph.shapes[this.program.graph.inputs[0]!]!.slice(1).map((d) => d ?? 2);
  }

  /** Each input's sample shape (a length left open reads 2). */
  get inputShapes(): readonly number[][] {
    return this.program.graph.inputs.map((t) => this.program.graph.shapes[t]!.slice(1).map((d) => d ?? 2));
  }

  get outShapes(): readonly number[][] {
    return this.first.outShapes;
  }

  get outShape(): readonly number[] {
    return this.first.outShapes[0]!;
  }

  /** Starts timing each op's passes (from the next step on), or stops and returns what was timed, per layer, slowest first. */
  timeOps(on: boolean): Array<{ layer: string; forwardMs: number; backwardMs: number }> {
    const t = this.timing;
    this.timing = on ? new Map() : null;
    return [...(t ?? new Map<string, { forward: number; backward: number }>()).entries()]
      .map(([layer, v]) => ({ layer, forwardMs: v.forward, backwardMs: v.backward }))
      .sort((a, b) => b.forwardMs + b.backwardMs - (a.forwardMs + a.backwardMs));
  }

  private timed(layer: string, pass: "forward" | "backward", f: () => void): void {
    if (!this.timing) return f();
    const t0 = performance.now();
    f();
    const e = this.timing.get(layer) ?? { forward: 0, backward: 0 };
    e[pass] += performance.now() - t0;
    this.timing.set(layer, e);
  }

  /** What the step's arrays take at the model's declared input shapes: per sample and fixed (the memory estimate's activations). */
  memory(): NativeMemory {
    const one = arrayBytes(this.first, 1);
    const perSample = arrayBytes(this.first, 2) - one;
    return { bytesPerSample: perSample, fixedBytes: one - perSample };
  }

  /** The ops that hold trainable variables, in layer order, and where each one's gradients start in the flat gradient; null where they do not lie in layer order. */
  get units(): Array<{ op: number; from: number }> | null {
    if (!this.inOrder) return null;
    return this.first.ops.flatMap((o, k) => {
      const at = o.op.params.flatMap((p) => (p.offset === null ? [] : [p.offset]));
      return at.length ? [{ op: k, from: Math.min(...at) }] : [];
    });
  }

  private schedule(xs: readonly Tensorlike[]): Schedule {
    const shapes = xs.map((t) => t.shape.slice(1));
    const declared = this.program.graph.inputs.map((t) => this.program.graph.shapes[t]!.slice(1));
    shapes.forEach((s, i) => {
      const d = declared[i];
      if (d && (s.length !== d.length || s.some((n, j) => d[j] !== null && d[j] !== n)))
        throw new Error(
          `the model takes samples of shape [${d.map((n) => n ?? "any").join(", ")}], not [${s.join(", ")}]`,
        );
    });
    const s = this.program.schedule(shapes);
    if (typeof s === "string") throw new Error(s);
    return s;
  }

  private check(s: Schedule, xs: readonly Tensorlike[], ys: readonly Tensorlike[], batch: number): void {
    if (xs.length !== s.inputs.length) throw new Error(`the model takes ${s.inputs.length} input(s), not ${xs.length}`);
    if (ys.length !== s.outputs.length)
      throw new Error(`the model has ${s.outputs.length} output(s) and takes as many targets, not ${ys.length}`);
    xs.forEach((x, i) => {
      if (x.shape[0] !== batch) throw new Error(`input ${i} has ${x.shape[0]} samples, input 0 ${batch}`);
    });
    ys.forEach((y, k) => {
      const shape = s.outShapes[k]!;
      const cols = shape[shape.length - 1] ?? 1;
      const loss = this.objective.heads[k]!.loss;
      const want = batch * (sizeOf(shape) / cols) * labelsPerRow(loss, cols);
      if (y.shape[0] !== batch || sizeOf(y.shape) !== want) {
        throw new Error(
          `the ${loss} loss takes targets of shape [${batch}, ${shape.join(", ")}]${loss === "sparseCategoricalCrossentropy" ? " (or one class index per row)" : ""}, not [${y.shape.join(", ")}]`,
        );
      }
    });
  }

  /** The views one call of op k computes in. */
  private io(s: Schedule, o: ScheduledOp, k: number, batch: number): OpIO {
    const a = this.arrays;
    const view = (i: number): Float32Array => a.values[s.slots.value[i]!]!.subarray(0, batch * s.sizes[i]!);
    const saved = o.op.saved(batch).map((n, j) => a.saved[k]![j]!.subarray(0, n));
    const temp = o.op.temps(batch).map((n, j) => a.temps[j]!.subarray(0, n));
    return {
      batch,
      x: o.inputs.map(view),
      y: o.outputs.map(view),
      mask: o.mask === null ? null : view(o.mask),
      saved,
      temp,
    };
  }

  private forward(
    s: Schedule,
    xs: readonly Tensorlike[],
    batch: number,
    before?: (k: number) => Promise<void>,
  ): Promise<OpIO[]> | OpIO[] {
    this.arrays.fit(s, batch);
    s.inputs.forEach((st, i) => (this.arrays.values[s.slots.value[st]!] = floats(xs[i]!)));
    const ios: OpIO[] = [];
    if (!before) {
      s.ops.forEach((o, k) => {
        const io = this.io(s, o, k, batch);
        ios.push(io);
        if (batch > 0) this.timed(o.op.layer, "forward", () => o.op.forward(this.ctx, io));
      });
      return ios;
    }
    return (async () => {
      for (let k = 0; k < s.ops.length; k++) {
        await before(k);
        const io = this.io(s, s.ops[k]!, k, batch);
        ios.push(io);
        if (batch > 0) s.ops[k]!.op.forward(this.ctx, io);
      }
      return ios;
    })();
  }

  /** Each head's loss, its gradient written into its output's gradient array. */
  private losses(
    s: Schedule,
    ys: readonly Tensorlike[],
    batch: number,
    weight: number,
  ): { each: number[]; total: number } {
    return headLosses(s, this.arrays, this.objective, ys.map(floats), batch, weight, this.eps);
  }

  /** One op's backward pass, its penalties after, then `done` (its weights' gradients are final). */
  private backwardOp(s: Schedule, o: ScheduledOp, io: OpIO, batch: number, weight: number, done: () => void): number {
    const a = this.arrays;
    const grad = (i: number): Float32Array => a.grads[s.slots.grad[i]!]!.subarray(0, batch * s.sizes[i]!);
    for (const z of o.zeroFirst) grad(z).fill(0);
    let penalty = 0;
    let announced = false;
    const paramsDone = (): void => {
      if (announced) return;
      announced = true;
      for (const p of o.penalties) penalty += applyPenalty(this.ctx, p, weight);
      done();
    };
    const gio = gradIO(
      io,
      o.outputs.map((i) => (s.grads[i] ? grad(i) : new Float32Array(0))),
      o.inputs.map((i, j) => (o.needDx[j] ? grad(i) : null)),
      o.addDx,
      paramsDone,
    );
    if (batch > 0) this.timed(o.op.layer, "backward", () => o.op.backward(this.ctx, gio));
    paramsDone();
    return penalty;
  }

  /**
   * weight x dL/dvars of the slice's loss into `grads` (laid out as the variables), and the
   * loss; `outs` are the model's outputs for the slice, valid until the next call. `ready(from)`
   * says, during the backward pass, that grads[from..] are final.
   */
  run(x: Feed, y: Feed, weight: number, grads: Float32Array, ready?: (from: number) => void): StepOutcome {
    const xs = list(x);
    const ys = list(y);
    const batch = xs[0]?.shape[0] ?? 0;
    const s = this.schedule(xs);
    this.check(s, xs, ys, batch);
    const ios = this.forward(s, xs, batch) as OpIO[];
    const { each, total } = this.losses(s, ys, batch, weight);
    this.target = { grads, base: 0 };
    this.written.clear();
    let penalties = 0;
    for (let k = s.ops.length - 1; k >= 0; k--) {
      const o = s.ops[k]!;
      if (!o.backward) {
        for (const p of o.penalties) penalties += applyPenalty(this.ctx, p, weight);
        continue;
      }
      const from = this.inOrder ? minOffset(o) : null;
      penalties += this.backwardOp(s, o, ios[k]!, batch, weight, () => {
        if (ready && from !== null) ready(from);
      });
    }
    return this.outcome(s, batch, total + penalties, each);
  }

  private outcome(s: Schedule, batch: number, loss: number, each: number[]): StepOutcome {
    const outs = s.outputs.map((o) => this.arrays.values[s.slots.value[o]!]!.subarray(0, batch * s.sizes[o]!));
    return { loss, each, outs, out: outs[0]! };
  }

  /** run() with each unit's weights gathered before its forward and backward pass, and its gradients handed over unit by unit (ZeRO-3). */
  async runGathered(x: Feed, y: Feed, weight: number, hooks: UnitHooks): Promise<StepOutcome> {
    const xs = list(x);
    const ys = list(y);
    const batch = xs[0]?.shape[0] ?? 0;
    const s = this.schedule(xs);
    this.check(s, xs, ys, batch);
    const trains = (o: ScheduledOp): boolean => o.op.params.some((p) => p.offset !== null);
    // An empty slice computes nothing but takes its part in every unit's collectives (its gradients zero).
    const ios = await this.forward(s, xs, batch, async (k) => {
      if (trains(s.ops[k]!)) await hooks.gather(k, "forward");
    });
    const { each, total } =
      batch > 0 ? this.losses(s, ys, batch, weight) : { each: this.objective.heads.map(() => 0), total: 0 };
    this.written.clear();
    let penalties = 0;
    for (let k = s.ops.length - 1; k >= 0; k--) {
      const o = s.ops[k]!;
      if (!trains(o)) {
        if (o.backward) {
          this.target = { grads: new Float32Array(0), base: 0 };
          this.backwardOp(s, o, ios[k]!, batch, weight, () => undefined);
        }
        continue;
      }
      await hooks.gather(k, "backward");
      this.target = hooks.gradients(k);
      if (o.backward) penalties += this.backwardOp(s, o, ios[k]!, batch, weight, () => undefined);
      else for (const p of o.penalties) penalties += applyPenalty(this.ctx, p, weight);
      await hooks.reduced(k);
    }
    return this.outcome(s, batch, total + penalties, each);
  }
}
