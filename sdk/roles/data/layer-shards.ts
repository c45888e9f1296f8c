import * as tf from "@tensorflow/tfjs";
import { hasNonFinite } from "../../backends/native/finite";
import type { NativeBackend } from "../../backends/native/backend";
import type { NativeStep, StepOutcome } from "../../backends/native/step/native-step";
import { ModelError, ProtocolError, StateError } from "../../errors/errors";
import type { FlatRanges } from "../../model/flat-state";
import type { OptimizerSpec } from "../../protocol/optimizer-spec";
import type { Tensorlike } from "../../protocol/tensor";
import type { HostIO } from "../role";
import type { Feed } from "../../compute/objective";
import type { LoadedReplica } from "../../compute/loaded-replica";
import type { UpdateRule } from "../../compute/tfjs-update";
import { hasNativeKernel, makeUpdateRule } from "../../compute/update-rule";
import { NativeUpdate } from "../../compute/native-update";
import { partsOf } from "./optimizer-shard";
import { ShardState } from "./shard-state";
import { bindViews } from "./bound-weights";
import { shardBuckets } from "../../plan/shard-buckets";
import type { CommHook } from "./hooks/comm-hook";
import type { Collective } from "./step-result";
import { StepCollectives } from "./step-collectives";
import { UnitGathers } from "./unit-gathers";
import { UnitReduces } from "./unit-reduces";
import { named, type Unit } from "./shard-unit";

/**
 * ZeRO stages 2 and 3 (Rajbhandari et al. 2020; FSDP's SHARD_GRAD_OP and FULL_SHARD) for a
 * data-parallel replica on the native step. The layers are grouped into buckets of consecutive
 * layers (shard-buckets.ts; a bucket may be one layer), each bucket's parameters split over the
 * replicas as the ring splits a buffer of its length; a replica keeps its part of every bucket
 * (its shard), the optimizer's state and the summed gradient for it alone. Once the backward
 * pass has written a bucket's gradients (into one buffer the size of the largest bucket) they
 * are reduce-scattered, each replica keeping the sum of its part. Stage 3: the model's
 * variables hold no values of their own, and before a bucket's forward and again before its
 * backward pass its weights are all-gathered into a second such buffer. Stage 2: the variables
 * keep the whole weights, and after the update every bucket's new weights are all-gathered into
 * them, in place. Every collective is one per bucket, in the same order on every replica.
 */
export class LayerShards {
  /** This step's collectives so far, and when each ran. */
  private readonly record = new StepCollectives();
  /** Stage 3's gathers before each pass (null under stage 2, whose variables keep the whole weights). */
  private readonly gathers: UnitGathers | null;
  private readonly reduces: UnitReduces;
  /** Stage 2: each unit's weights in one buffer of its own, which its variables view: gathered into in place. */
  private readonly layerWeights: Float32Array[] = [];
  /** Loaded with weights "parts" (stage 3): its shard holds zeros until "setShard" brings its values. */
  awaitingShard = false;
  /** Which unit each of the native step's ops with weights belongs to. */
  private readonly unitByOp: ReadonlyMap<number, number>;

  private constructor(
    /** 2: the gradient and optimizer state sharded; 3: the weights too. */
    readonly stage: 2 | 3,
    private readonly backend: NativeBackend,
    private readonly step: NativeStep,
    private readonly units: readonly Unit[],
    /** This replica's part of every layer's weights, in layer order; null where the optimizer updates it in place in the variables (ZeRO-2). */
    private readonly shard: tf.Variable | null,
    private readonly update: UpdateRule,
    /** The summed gradient of the shard, as the step's reduce-scatters leave it. */
    readonly gradient: Float32Array,
    private readonly io: () => HostIO,
    /** Values in the largest unit: what each gather and gradient buffer holds. */
    largest: number,
    /** How each unit's gradient travels (16-bit floats with error feedback, or float32 as it is). */
    private readonly hook: CommHook,
    /** The lengths of the tensors the update keeps each slot in (checkpoints lay them flat). */
    private readonly pieces: readonly number[],
    /** Each unit's collectives started ahead, to run while the next unit computes (two buffers of each kind). */
    overlap: boolean,
  ) {
    this.unitByOp = new Map(units.flatMap((u, k) => u.ops.map((o) => [o, k] as const)));
    // Stage 2 gathers into its units' own buffers (layerWeights): it needs no gather buffer.
    this.gathers = stage === 3 ? new UnitGathers(backend, units, (u, into) => this.ownPart(u, into), largest, this.record, overlap) : null;
    this.reduces = new UnitReduces(gradient, largest, hook, this.record, overlap);
  }

  get stats(): StepCollectives["stats"] {
    return this.record.stats;
  }

  get collectives(): Collective[] {
    return this.record.list;
  }

  /** The replica's shard cut from the whole model it loaded (stage 3: whose variables then let go of their values). */
  static create(stage: 2 | 3, r: LoadedReplica, spec: OptimizerSpec, io: () => HostIO, backend: NativeBackend, hook: CommHook, o: { bucketBytes: number; overlap: boolean; parts?: boolean }): LayerShards {
    const step = r.step.native;
    const name = stage === 3 ? 'shard "parameters" (ZeRO-3)' : 'shard "gradients" (ZeRO-2)';
    if (o.parts && stage !== 3) throw new ProtocolError('weights "parts" loads a ZeRO-3 replica; a ZeRO-2 replica keeps the whole weights and is sent them');
    if (!step) {
      throw new ModelError(`${name} works layer by layer inside meshtrain's native step, and this model trains by TF.js's autodiff, because ${r.step.why}`, {
        hint: 'use shard "optimizer" (ZeRO-1), or a model of the layers the native step computes (Dense, Conv2D, pooling, Flatten, Reshape) on the native backend',
      });
    }
    const layers = step.units;
    if (!layers) throw new ModelError(`${name} needs the layers' trainable weights in layer order, and this model lists them otherwise`, { hint: 'use shard "optimizer" (ZeRO-1)' });
    const ends = layers.map((_, k) => layers[k + 1]?.from ?? r.gradientLength);
    const listed = shardBuckets(layers.map((l, k) => (ends[k]! - l.from) * 4), o.bucketBytes).map((b) => ({ ops: layers.slice(b.first, b.last + 1).map((l) => l.op), layers: b.last > b.first ? { layer: b.first, last: b.last } : { layer: b.first }, from: layers[b.first]!.from, to: ends[b.last]! }));
    const offsets = r.sizes.map((_, i) => r.sizes.slice(0, i).reduce((a, b) => a + b, 0));
    let kept = 0;
    const units = listed.map(({ ops, layers: names, from, to }): Unit => {
      const vars = r.vars.flatMap((v, i) => (offsets[i]! >= from && offsets[i]! < to ? [{ v, at: offsets[i]! - from }] : []));
      const [start, end] = io().shardOf(to - from);
      const unit = { ops, layers: names, from, length: to - from, vars, start, end, kept, parts: partsOf(r.vars, from + start, from + end) };
      kept += end - start;
      return unit;
    });
    const { shard, update, pieces } = shardUpdate(stage, units, kept, spec, backend, o.parts === true);
    const largest = Math.max(1, ...units.map((u) => u.length));
    const shards = new LayerShards(stage, backend, step, units, shard, update, new Float32Array(kept), io, largest, hook, pieces, o.overlap);
    if (stage === 2) {
      for (const u of units) shards.layerWeights.push(bindViews(backend, u.vars, new Float32Array(u.length)));
      return shards;
    }
    shards.awaitingShard = o.parts === true;
    // Until a layer is gathered its variables show the gather buffer: the whole weights they held are let go.
    const placeholder = shards.gathers!.placeholder();
    for (const u of units) for (const { v, at } of u.vars) backend.rebind(v, placeholder.subarray(at, at + v.size));
    return shards;
  }

  /** Its optimizer state for checkpoints: one tensor per slot over its part of every layer. */
  state(): ShardState {
    return new ShardState(this.update, this.ownRanges(), this.pieces);
  }

  /** The [from, to) ranges of the flat trainable weights this replica holds, in the order its shard lays them out. */
  ownRanges(): FlatRanges {
    return this.units.filter((u) => u.end > u.start).map((u): [number, number] => [u.from + u.start, u.from + u.end]);
  }

  /** Stage 3, loaded without the whole model (weights "parts"): its shard's values, laid flat over `ranges`, which must be its own. */
  setShard(values: Float32Array, ranges: FlatRanges): void {
    const own = this.ownRanges();
    const same = ranges.length === own.length && ranges.every(([f, t], i) => f === own[i]![0] && t === own[i]![1]);
    if (this.stage !== 3 || !this.shard || !same) {
      throw new ProtocolError(`"setShard" brought ranges ${JSON.stringify(ranges)}; this ${this.stage === 3 ? "replica holds" : "ZeRO-2 replica keeps the whole weights, and would hold"} ${JSON.stringify(own)}`);
    }
    if (values.length !== this.shard.size) throw new ProtocolError(`"setShard" brought ${values.length} values for a shard of ${this.shard.size}`);
    // The values arrived in an array of their own: the shard takes it, and its zeros (never written) go.
    this.backend.rebind(this.shard, values);
    this.awaitingShard = false;
  }

  /** The slice's forward and backward pass, each layer gathered, its gradient reduce-scattered into `gradient` (`add`: a later chunk's, added to it). */
  async slice(x: Feed, y: Feed, weight: number, io: HostIO, add = false): Promise<StepOutcome> {
    await this.reduces.drain();
    if (!add) this.record.restart();
    const unit = (op: number): Unit => this.units[this.unitOf(op)]!;
    const out = await this.step.runGathered(x, y, weight, {
      gather: (op, pass) => this.gather(op, io, pass === "forward" ? 1 : -1),
      // A unit's gradient buffer is zeroed at its last layer, the first the backward pass reaches; it is complete after its first.
      gradients: (op) => {
        const u = unit(op);
        return this.reduces.scratch(u, op === u.ops[u.ops.length - 1]);
      },
      reduced: async (op) => {
        const u = unit(op);
        if (op === u.ops[0]) await this.reduces.reduce(u, io, add);
      },
    });
    await this.reduces.finish();
    return out;
  }

  /** A step every replica dropped sent nothing that counts, and its rounding error may hold Infinity: none is carried. */
  dropped(): void {
    this.hook.clear();
  }

  /** Whether the summed gradient of this replica's shard holds NaN or Infinity. */
  get nonFinite(): boolean {
    return hasNonFinite(this.gradient);
  }

  /**
   * A kept step: the shard's summed gradient through the optimizer. Stage 3 gathers the layers
   * anew when next needed; stage 2 all-gathers every layer's new weights into the variables now.
   */
  async apply(io: HostIO, learningRate?: number): Promise<void> {
    this.update.apply(this.gradient, learningRate);
    this.gathers?.stale();
    if (this.stage === 3) return;
    for (const [k, u] of this.units.entries()) await this.gatherInPlace(k, u, io);
  }

  /**
   * Stage 2: every replica's new part of layer `u` gathered into the buffer its variables view
   * (the update wrote this replica's part there): no copy into the variables after the gather,
   * which on the 11.4M MLP cost about a tenth of the step.
   */
  private async gatherInPlace(k: number, u: Unit, io: HostIO): Promise<void> {
    // A variable the update had to copy (its memory was shared with another tensor) is brought back in.
    const buf = bindViews(this.backend, u.vars, this.layerWeights[k]!);
    if (this.shard) buf.set(this.backend.values(this.shard).subarray(u.kept, u.kept + u.end - u.start), u.start);
    const start = this.record.now();
    const ag = await io.allGather(buf);
    this.record.waited(ag.stats, named("all-gather", u), start);
    // Through the communication thread (WebSocket links) the buffer comes back as another: the variables view that one.
    if (ag.data !== buf) this.layerWeights[k] = bindViews(this.backend, u.vars, ag.data, true);
  }

  /** The model's weights in `model.weights` order, each layer gathered in turn and copied: every replica must be asked at once. */
  async weightsOf(model: tf.LayersModel): Promise<Tensorlike[]> {
    const whole = new Map<tf.Variable, Float32Array>();
    const io = this.links();
    for (const u of this.units) {
      await this.gather(u.ops[0]!, io);
      for (const { v } of u.vars) whole.set(v, Float32Array.from(this.backend.values(v)));
    }
    const out: Tensorlike[] = [];
    for (const w of model.weights) {
      const v = w.read();
      const data = whole.get(v as tf.Variable) ?? (v.dtype === "int32" ? Int32Array.from(await v.data()) : Float32Array.from(await v.data()));
      out.push({ data, shape: [...w.shape] as number[] });
    }
    return out;
  }

  /** Stage 3, for a pass outside the step (validation): gathers the unit holding `layer`'s weights, if it has any. A collective. */
  async gatherLayer(layer: { trainableWeights: ReadonlyArray<{ read(): tf.Tensor }> }, io: HostIO): Promise<void> {
    const held = new Set(layer.trainableWeights.map((w) => w.read()));
    const u = this.units.find((unit) => unit.vars.some(({ v }) => held.has(v)));
    if (u) await this.gather(u.ops[0]!, io);
  }

  /**
   * The links of the membership the workers form now. A step's collectives go over the links it
   * was sent for (its `io`), never these: a step still running when the ring is re-formed must
   * not take part in the new ring's collectives, whose sequence it would shift on this replica.
   */
  links(): HostIO {
    return this.io();
  }

  private unitOf(op: number): number {
    return this.unitByOp.get(op) ?? -1;
  }

  /** Stage 3: the unit's weights into its variables before its pass (stage 2's variables hold them already); `ahead` inside a step. */
  private async gather(op: number, io: HostIO, ahead = 0): Promise<void> {
    await this.gathers?.gather(this.unitOf(op), io, ahead);
  }

  /** This replica's part of unit `u`'s weights, written into `into` at the unit's `start`. */
  private ownPart(u: Unit, into: Float32Array): void {
    if (this.awaitingShard) throw new StateError('this ZeRO-3 replica was loaded without weights, and "setShard" has not brought its part of them yet');
    if (this.shard) {
      into.set(this.backend.values(this.shard).subarray(u.kept, u.kept + u.end - u.start), u.start);
      return;
    }
    let off = u.start;
    for (const p of u.parts) {
      into.set(this.backend.values(p.v).subarray(p.from, p.to), off);
      off += p.to - p.from;
    }
  }

  /** The trainable variable the shard's first non-finite summed gradient value belongs to. */
  nonFiniteVariable(names: ReadonlyMap<tf.Variable, string>): string {
    const i = this.gradient.findIndex((g) => !Number.isFinite(g));
    const u = this.units.find((w) => i >= w.kept && i < w.kept + w.end - w.start);
    const p = u ? u.start + i - u.kept : -1;
    const hit = u?.vars.find(({ v, at }) => p >= at && p < at + v.size);
    return hit ? (names.get(hit.v) ?? "?") : "?";
  }

  /** A sample shape's empty batch, for a slice that takes its part in the collectives without computing. */
  emptyBatch(): { x: Tensorlike[]; y: Tensorlike[] } {
    const empty = (shape: readonly number[]): Tensorlike => ({ data: new Float32Array(0), shape: [0, ...shape] });
    return { x: this.step.inputShapes.map(empty), y: this.step.outShapes.map(empty) };
  }

  dispose(): void {
    this.update.dispose();
    this.shard?.dispose();
  }
}

/**
 * What updates the replica's part of every layer: under ZeRO-2 with an optimizer that updates in
 * place, the model's own variables over those ranges (the whole weights are there anyway); else
 * one variable holding a copy of the part (ZeRO-3's variables let go of their values), which the
 * optimizer updates and the gathers read.
 */
function shardUpdate(stage: 2 | 3, units: readonly Unit[], kept: number, spec: OptimizerSpec, backend: NativeBackend, parts: boolean): { shard: tf.Variable | null; update: UpdateRule; pieces: number[] } {
  const spans = units.flatMap((u) => u.parts);
  if (stage === 2 && hasNativeKernel(spec)) {
    return { shard: null, update: new NativeUpdate(backend, spans.map((p) => p.v), spec, spans.map((p) => [p.from, p.to] as const)), pieces: spans.map((p) => p.to - p.from) };
  }
  const own = new Float32Array(kept);
  let off = 0;
  // Loaded in parts, the variables hold only zeros: "setShard" brings the part, left untouched (and unpaged) till then.
  for (const p of parts ? [] : spans) {
    own.set(backend.values(p.v).subarray(p.from, p.to), off);
    off += p.to - p.from;
  }
  const initial = tf.tensor1d(own);
  const shard = tf.variable(initial, true, `layer_shard_${Math.random().toString(36).slice(2)}`);
  initial.dispose();
  return { shard, update: makeUpdateRule([shard], spec), pieces: [kept] };
}
