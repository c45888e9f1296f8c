import * as tf from "@tensorflow/tfjs";
import type { AllReduceStats } from "../../collectives/ring-allreduce";
import { hasNonFinite } from "../../backends/native/finite";
import type { NativeBackend } from "../../backends/native/backend";
import type { NativeStep } from "../../backends/native/step/native-step";
import { ModelError } from "../../errors/errors";
import type { OptimizerSpec } from "../../protocol/optimizer-spec";
import type { Tensorlike } from "../../protocol/tensor";
import type { HostIO } from "../role";
import type { LoadedReplica } from "../slice-gradient";
import type { UpdateRule } from "../tfjs-update";
import { hasNativeKernel, makeUpdateRule } from "../update-rule";
import { NativeUpdate } from "../native-update";
import { partsOf, type ShardPart } from "./optimizer-shard";
import { ShardState } from "./shard-state";
import { bindViews } from "./bound-weights";
import { shardBuckets } from "../../plan/shard-buckets";
import type { ErrorFeedback } from "../error-feedback";
import type { Collective } from "./step-result";

/** Collectives a step reports, at most (a deep model makes three per layer). */
const MAX_RECORDED = 4096;

/** A bucket of consecutive layers' trainable variables, whose collectives run as one. */
interface Unit {
  /** The native step's ops that hold them, in layer order. */
  ops: number[];
  /** Its first and last layer, indices among the layers with weights (as the step's records name them). */
  layers: { layer: number; last?: number };
  /** [from, from + length) of the flat parameters. */
  from: number;
  length: number;
  /** Each variable, and where it starts in the layer's part of the flat parameters. */
  vars: Array<{ v: tf.Variable; at: number }>;
  /** This replica's part of the layer: [start, end) of it, kept from `kept` in the replica's shard. */
  start: number;
  end: number;
  kept: number;
  /** Where that part lies in the variables. */
  parts: ShardPart[];
}

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
  /** The unit whose weights the variables hold now (-1: none; the shard changed since). */
  private gathered = -1;
  private weightsMemory: ArrayBuffer;
  private gradientMemory: ArrayBuffer;
  private pending: Float32Array | null = null;
  /** This step's collectives so far, and when each ran (ms from `began`, the step's start). */
  stats: AllReduceStats = { waitMs: 0, commMs: 0, bytesSent: 0 };
  collectives: Collective[] = [];
  private began = 0;
  /** A later chunk of an accumulated slice: its summed gradient is added to the shard's. */
  private adding = false;
  /** Stage 2: each layer's weights in one buffer of its own, which its variables view: gathered into in place. */
  private readonly layerWeights: Float32Array[] = [];

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
    /** Values in the largest layer: what each of the two buffers holds. */
    private readonly largest: number,
    /** compression: each layer's gradient reduce-scattered as 16-bit floats, what rounding left out carried to the next step. */
    private readonly feedback: ErrorFeedback | null,
    /** The lengths of the tensors the update keeps each slot in (checkpoints lay them flat). */
    private readonly pieces: readonly number[],
  ) {
    // Stage 2 gathers into its layers' own buffers (layerWeights): it needs no gather buffer.
    this.weightsMemory = new ArrayBuffer(stage === 3 ? largest * 4 : 0);
    this.gradientMemory = new ArrayBuffer(largest * 4);
  }

  /** The replica's shard cut from the whole model it loaded (stage 3: whose variables then let go of their values). */
  static create(stage: 2 | 3, r: LoadedReplica, spec: OptimizerSpec, io: () => HostIO, backend: NativeBackend, feedback: ErrorFeedback | null, bucketBytes: number): LayerShards {
    const step = r.step.native;
    const name = stage === 3 ? 'shard "parameters" (ZeRO-3)' : 'shard "gradients" (ZeRO-2)';
    if (!step) {
      throw new ModelError(`${name} works layer by layer inside meshtrain's native step, and this model trains by TF.js's autodiff, because ${r.step.why}`, {
        hint: 'use shard "optimizer" (ZeRO-1), or a model of the layers the native step computes (Dense, Conv2D, pooling, Flatten, Reshape) on the native backend',
      });
    }
    const layers = step.units;
    if (!layers) throw new ModelError(`${name} needs the layers' trainable weights in layer order, and this model lists them otherwise`, { hint: 'use shard "optimizer" (ZeRO-1)' });
    const ends = layers.map((_, k) => layers[k + 1]?.from ?? r.gradientLength);
    const listed = shardBuckets(layers.map((l, k) => (ends[k]! - l.from) * 4), bucketBytes).map((b) => ({ ops: layers.slice(b.first, b.last + 1).map((l) => l.op), layers: b.last > b.first ? { layer: b.first, last: b.last } : { layer: b.first }, from: layers[b.first]!.from, to: ends[b.last]! }));
    const offsets = r.sizes.map((_, i) => r.sizes.slice(0, i).reduce((a, b) => a + b, 0));
    let kept = 0;
    const units = listed.map(({ ops, layers: names, from, to }): Unit => {
      const vars = r.vars.flatMap((v, i) => (offsets[i]! >= from && offsets[i]! < to ? [{ v, at: offsets[i]! - from }] : []));
      const [start, end] = io().shardOf(to - from);
      const unit = { ops, layers: names, from, length: to - from, vars, start, end, kept, parts: partsOf(r.vars, from + start, from + end) };
      kept += end - start;
      return unit;
    });
    const { shard, update, pieces } = shardUpdate(stage, units, kept, spec, backend);
    const largest = Math.max(1, ...units.map((u) => u.length));
    const shards = new LayerShards(stage, backend, step, units, shard, update, new Float32Array(kept), io, largest, feedback, pieces);
    if (stage === 2) {
      for (const u of units) shards.layerWeights.push(bindViews(backend, u.vars, new Float32Array(u.length)));
      return shards;
    }
    // Until a layer is gathered its variables show the gather buffer: the whole weights they held are let go.
    const placeholder = new Float32Array(shards.weightsMemory);
    for (const u of units) for (const { v, at } of u.vars) backend.rebind(v, placeholder.subarray(at, at + v.size));
    return shards;
  }

  /** Its optimizer state for checkpoints: one tensor per slot over its part of every layer. */
  state(): ShardState {
    const ranges = this.units.filter((u) => u.end > u.start).map((u): [number, number] => [u.from + u.start, u.from + u.end]);
    return new ShardState(this.update, ranges, this.pieces);
  }

  /** The slice's forward and backward pass, each layer gathered, its gradient reduce-scattered into `gradient` (`add`: a later chunk's, added to it). */
  async slice(x: Tensorlike, y: Tensorlike, weight: number, io: HostIO, add = false): Promise<{ loss: number; out: Float32Array }> {
    this.adding = add;
    if (!add) {
      this.stats = { waitMs: 0, commMs: 0, bytesSent: 0 };
      this.collectives = [];
      this.began = performance.now();
    }
    return this.step.runGathered(x, y, weight, { gather: (op) => this.gather(op, io), gradients: (op) => this.scratch(op), reduced: (op) => this.reduce(op, io) });
  }

  /** A step every replica dropped sent nothing that counts, and its rounding error may hold Infinity: none is carried. */
  dropped(): void {
    this.feedback?.clear();
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
    this.gathered = -1;
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
    const start = performance.now() - this.began;
    const ag = await io.allGather(buf);
    this.count(ag.stats, { kind: "all-gather", ...u.layers, start, end: performance.now() - this.began });
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
    return this.units.findIndex((u) => u.ops.includes(op));
  }

  /** Stage 3: the layer's weights into its variables before its pass (stage 2's variables hold them already). */
  private async gather(op: number, io: HostIO): Promise<void> {
    const k = this.unitOf(op);
    if (this.stage === 2 || this.gathered === k) return;
    const u = this.units[k]!;
    const whole = await this.allGather(u, io);
    for (const { v, at } of u.vars) this.backend.rebind(v, whole.subarray(at, at + v.size));
    this.gathered = k;
  }

  /** Every replica's part of layer `u`'s weights, whole, in the gather buffer (valid until the next gather). */
  private async allGather(u: Unit, io: HostIO): Promise<Float32Array> {
    const buf = new Float32Array(room(this.weightsMemory, this.largest), 0, u.length);
    if (this.shard) buf.set(this.backend.values(this.shard).subarray(u.kept, u.kept + u.end - u.start), u.start);
    else {
      let off = u.start;
      for (const p of u.parts) {
        buf.set(this.backend.values(p.v).subarray(p.from, p.to), off);
        off += p.to - p.from;
      }
    }
    // buf's memory moves to the communication thread and back: the views of the layer gathered before go with it.
    const start = performance.now() - this.began;
    const ag = await io.allGather(buf);
    this.count(ag.stats, { kind: "all-gather", ...u.layers, start, end: performance.now() - this.began });
    this.weightsMemory = ag.data.buffer as ArrayBuffer;
    return ag.data;
  }

  /** The bucket's gradient buffer: zeroed as the backward pass reaches its last layer, written into by each of its layers in turn. */
  private scratch(op: number): { grads: Float32Array; base: number } {
    const u = this.units[this.unitOf(op)]!;
    if (op !== u.ops[u.ops.length - 1]) return { grads: this.pending!, base: u.from };
    this.pending = new Float32Array(room(this.gradientMemory, this.largest), 0, u.length);
    this.pending.fill(0);
    return { grads: this.pending, base: u.from };
  }

  /** Once the backward pass has written the bucket's first layer, the bucket is complete: reduce-scattered. */
  private async reduce(op: number, io: HostIO): Promise<void> {
    const u = this.units[this.unitOf(op)]!;
    if (op !== u.ops[0]) return;
    this.feedback?.compress(this.pending!, u.from);
    const start = performance.now() - this.began;
    const rs = await io.reduceScatter(this.pending!, this.feedback?.wire(u.length));
    this.pending = null;
    this.count(rs.stats, { kind: "reduce-scatter", ...u.layers, start, end: performance.now() - this.began });
    const mine = rs.data.subarray(u.start, u.end);
    if (this.adding) for (let i = 0; i < mine.length; i++) this.gradient[u.kept + i]! += mine[i]!;
    else this.gradient.set(mine, u.kept);
    this.gradientMemory = rs.data.buffer as ArrayBuffer;
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
  emptyBatch(): { x: Tensorlike; y: Tensorlike } {
    return { x: { data: new Float32Array(0), shape: [0, ...this.step.inputShape] }, y: { data: new Float32Array(0), shape: [0, ...this.step.outShape] } };
  }

  private count(s: AllReduceStats, ran: Collective): void {
    if (this.collectives.length < MAX_RECORDED) this.collectives.push(ran);
    this.stats.waitMs += s.waitMs;
    this.stats.commMs += s.commMs;
    this.stats.bytesSent += s.bytesSent;
  }

  dispose(): void {
    this.update.dispose();
    this.shard?.dispose();
  }
}

/** `memory` where it holds `values` floats (a communication thread may hand back a smaller buffer), else a new buffer that does. */
function room(memory: ArrayBuffer, values: number): ArrayBuffer {
  return memory.byteLength >= values * 4 ? memory : new ArrayBuffer(values * 4);
}

/**
 * What updates the replica's part of every layer: under ZeRO-2 with an optimizer that updates in
 * place, the model's own variables over those ranges (the whole weights are there anyway); else
 * one variable holding a copy of the part (ZeRO-3's variables let go of their values), which the
 * optimizer updates and the gathers read.
 */
function shardUpdate(stage: 2 | 3, units: readonly Unit[], kept: number, spec: OptimizerSpec, backend: NativeBackend): { shard: tf.Variable | null; update: UpdateRule; pieces: number[] } {
  const parts = units.flatMap((u) => u.parts);
  if (stage === 2 && hasNativeKernel(spec)) {
    return { shard: null, update: new NativeUpdate(backend, parts.map((p) => p.v), spec, parts.map((p) => [p.from, p.to] as const)), pieces: parts.map((p) => p.to - p.from) };
  }
  const own = new Float32Array(kept);
  let off = 0;
  for (const p of parts) {
    own.set(backend.values(p.v).subarray(p.from, p.to), off);
    off += p.to - p.from;
  }
  const initial = tf.tensor1d(own);
  const shard = tf.variable(initial, true, `layer_shard_${Math.random().toString(36).slice(2)}`);
  initial.dispose();
  return { shard, update: makeUpdateRule([shard], spec), pieces: [kept] };
}
