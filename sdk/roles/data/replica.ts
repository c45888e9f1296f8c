import { ProtocolError, StateError } from "../../errors/errors";
import type { LoadOf, Message, MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../protocol/tensor";
import { wallClock } from "../../util/clock";
import { readWeights } from "../../model/model-io";
import type { HostIO, OverlapRing, RoleEnv, RoleReply, StepReport, WorkerRole } from "../role";
import type { AllReduceFn, StepResult } from "./step-result";
import { checkedSliceGradient, loadReplica, replicaStepReport, slowDown, slowReport, type LoadedReplica, type SliceOutcome } from "../slice-gradient";
import { makeUpdateRule } from "../update-rule";
import { nonFiniteVariable, survivedStepError, type NonFinite } from "../step-health";
import { ErrorFeedback } from "../error-feedback";
import { finishBuckets, GradientBuckets } from "./buckets";
import { evaluateReplica } from "./evaluate-gathered";
import { accumulatedSlice } from "./accumulate-slices";
import { SyncNorm } from "./sync-batchnorm";
import { PowerSgd } from "./power-sgd";
import { LocalRounds } from "./local-sgd";
import { OwnCopy } from "./own-copy";
import { StepBack } from "./step-back";
import { ZeroOne } from "./zero-one";
import { LayerShards } from "./layer-shards";
import { layerShardsStep, shardSet } from "./layer-shards-step";
import type { ShardState } from "./shard-state";
import type { FlatRanges } from "../../model/flat-state";
import * as tf from "@tensorflow/tfjs";
import type { NativeBackend } from "../../backends/native/backend";
import { feedRows, splitFeed, type Feed } from "../objective";
import type { OptimizerState, UpdateRule } from "../tfjs-update";
import { hasNonFinite } from "../../backends/native/finite";
import { onDevice, transfers } from "../device-io";

/**
 * One replica of synchronous data parallelism: its slice's gradient, weighted by the slice's
 * share of the global batch, all-reduced with every other's, then the update every replica applies.
 *
 * The all-reduced buffer is [gradient | change of the model's state | flag]. The state
 * (BatchNormalization's moving statistics) is averaged as Keras' MirroredStrategy does: each
 * replica normalises with its own slice's statistics, and the moving statistics end the step as
 * the weighted mean of the replicas'. The flag counts replicas whose slice held NaN or Infinity
 * or whose computation threw: when it is not zero, every replica drops the update alike, so
 * the replicas never differ and the ring is never left half-way.
 *
 * With compression the gradient travels as 16-bit floats with error feedback (state and flag in
 * float32: fp16 counts exactly only to 2048); a sum that overflowed is the same Infinity on
 * every replica (the ring hands all of them the same bits), so all drop that step alike.
 */
export class DataReplica implements WorkerRole {
  private readonly update: UpdateRule;
  /** The worker's own copy of the data (feed "workers"), and the order of the epoch it is in. */
  private shard: OwnCopy | null = null;
  /** Chunks each step's slice is computed in (fit option accumulate); 1: one pass. */
  private readonly accumulate: number;
  /** The step's rate under a learning-rate schedule (else the optimizer's own). */
  private learningRate: number | undefined;
  /** Steps taken since the load, and (elastic) the state before the last, to step back to. */
  private readonly back: StepBack;
  /**
   * The buffer the last step's sum came back in, for the next step: a fresh megabyte each step
   * made V8 count it as external memory and run a full collection every few dozen steps, which
   * cost a small model's step a third of its time.
   */
  private spare: Float32Array | null = null;
  private readonly feedback: ErrorFeedback | null;
  private readonly slowdown: number;
  private readonly elastic: boolean;
  /** The plan's choice: all-reduce in buckets during the backward pass (where the data plane and step can). */
  private readonly overlap: boolean;
  /** batchNorm "sync": normalization with the global batch's statistics, taken in all-reduced rounds. */
  private readonly sync: SyncNorm | null;
  /** compression powersgd: the gradient all-reduced as low-rank factors, with error feedback. */
  private readonly power: PowerSgd | null;
  private readonly zero: ZeroOne | null;
  /** shard "gradients" or "parameters" (ZeRO-2, ZeRO-3): this replica's part of every layer. */
  private layers: LayerShards | null = null;
  /** Local SGD / DiLoCo: steps update this replica alone; the steps marked sync all-reduce the weights' change. */
  private local: LocalRounds | null = null;
  private io: () => HostIO = noLinks;

  private constructor(private readonly r: LoadedReplica, msg: LoadOf<"replica">) {
    // Sharded (ZeRO-1), the optimizer's state is the shard's alone: none for the whole model.
    this.update = makeUpdateRule(msg.shard ? [] : r.vars, msg.optimizer);
    this.zero = msg.shard === "optimizer" ? new ZeroOne(r.vars, msg.optimizer, r.names, r.sizes) : null;
    // A sharded elastic replica never steps back: a loss re-loads every member from a checkpoint.
    this.back = new StepBack(r, this.update, (msg.elastic ?? false) && !msg.shard);
    this.slowdown = msg.slowdown ?? 1;
    this.elastic = msg.elastic ?? false;
    this.overlap = msg.overlap ?? false;
    this.accumulate = msg.accumulate ?? 1;
    this.feedback = msg.compression ? new ErrorFeedback(msg.compression, r.gradientLength) : null;
    this.sync = msg.batchNorm === "sync" ? new SyncNorm(r.model) : null;
    this.power = msg.powerSgd ? new PowerSgd(r.vars.map((v) => v.shape), msg.powerSgd.rank) : null;
  }

  static async load(msg: LoadOf<"replica">, weights: Tensorlike[] | "initial", env: Partial<RoleEnv> = {}): Promise<DataReplica> {
    const replica = new DataReplica(await loadReplica(msg, weights, env.memoryCapBytes ?? null), msg);
    if (msg.localSgd) replica.local = await LocalRounds.start(replica.r, msg.localSgd.outer, replica.elastic ? replica.update : null);
    if (msg.data) replica.shard = OwnCopy.of(msg.data);
    replica.io = env.io ?? noLinks;
    if (msg.shard === "gradients" || msg.shard === "parameters") replica.layers = LayerShards.create(msg.shard === "gradients" ? 2 : 3, replica.r, msg.optimizer, replica.io, tf.backend() as NativeBackend, replica.feedback, { bucketBytes: msg.bucketBytes ?? 0, overlap: msg.overlap ?? false, parts: msg.weights === "parts" });
    return replica;
  }

  get loaded(): WorkerRole["loaded"] {
    return { paramCount: this.r.model.countParams(), gradientLength: this.r.gradientLength, replicaStep: replicaStepReport(this.r), ...(this.shard ? { datasetSize: this.shard.dataset.size, dataBytes: this.shard.dataset.bytes } : {}), ...(this.layers?.awaitingShard ? { shardRanges: this.layers.ownRanges() } : {}) };
  }

  /** A step of the driver's: its slice comes attached (in-graph) or is read from the worker's own copy (between-graph). */
  step(msg: MessageOf<"step">, attachments: Tensorlike[], io: HostIO): Promise<StepReport> {
    if (this.local && msg.sync === "only") return this.trainLocal(this.local, 0, [], [], (data, wire) => io.allReduce(data, wire), msg.step, "only");
    const feed = msg.range ? this.readSlice(msg.epoch, msg.range.start, msg.range.end) : splitFeed(this.r.model, attachments);
    if (!feed) throw new ProtocolError(`"step" ${msg.step} carries ${attachments.length} tensors, expected ${this.expected}`);
    const { x, y } = feed;
    const overlap = this.overlap ? io.overlap() : null;
    this.learningRate = msg.learningRate;
    if (this.local) return this.trainLocal(this.local, msg.weight, x, y, (data, wire) => io.allReduce(data, wire), msg.step, msg.sync);
    if (this.layers) return layerShardsStep(this.layers, this.r, msg.weight, x, y, io, msg.step, this.learningRate, this.accumulate);
    return this.train(msg.weight, x, y, (data, wire) => io.allReduce(data, wire), msg.step, overlap, io);
  }

  /** Elastic training asks how many updates were applied, or to step back one. */
  answer(msg: Message, attachments: Tensorlike[] = []): Promise<RoleReply> | undefined {
    if (msg.type === "evaluate") {
      const feed = splitFeed(this.r.model, attachments);
      if (!feed) return Promise.reject(new ProtocolError(`"evaluate" carries ${attachments.length} tensors, expected ${this.expected}`));
      return evaluateReplica(this.r, this.layers, feed.x, feed.y, msg).then((s) => ({ draft: { type: "evaluated", re: msg.id, ...s } }));
    }
    if (msg.type === "setShard") return this.layers ? shardSet(this.layers, msg, attachments) : Promise.reject(new StateError('"setShard" came to a replica that holds no layers\' shards (ZeRO-3)'));
    if (msg.type !== "rewind") return undefined;
    const back = this.local ? this.rewindLocal(this.local, msg.sync ?? msg.to) : msg.to === undefined ? Promise.resolve(this.back.taken) : this.rewind(msg.to);
    return back.then((applied) => ({ draft: { type: "rewound", re: msg.id, applied } }));
  }

  /** Local SGD goes back to a sync (the last, or one named by its steps taken), its carried rounding error with it. */
  private rewindLocal(local: LocalRounds, to: number | "last" | undefined): Promise<number> {
    if (to === undefined) return Promise.resolve(local.stepsTaken);
    this.feedback?.clear();
    return local.back(to);
  }

  /** What a step or an evaluation carries: the model's inputs, then one target per output. */
  private get expected(): string {
    return `${this.r.model.inputs.length} input(s) and ${this.r.model.outputs.length} target(s)`;
  }

  /** This replica's slice of a step, read from the worker's own copy of the dataset. */
  private readSlice(epoch: number, start: number, end: number): { x: Tensorlike[]; y: Tensorlike[] } {
    if (!this.shard) throw new StateError("a step named a range of the dataset, but no dataset was loaded on this worker");
    return this.shard.slice(epoch, start, end);
  }

  /** Goes back to `to` steps taken (see StepBack); the carried rounding error belongs to the update stepped back from. */
  async rewind(to: number): Promise<number> {
    if (to !== this.back.taken) this.feedback?.clear();
    return this.back.rewind(to);
  }

  /**
   * Computes the slice's gradient, weighted by its share, sums it with the others' and applies
   * the update. With `overlap` (the native data plane) and the native step, the gradient goes in
   * buckets that start while the backward pass still runs.
   */
  async train(weight: number, x: Feed, y: Feed, allReduce: AllReduceFn, step = 0, overlap: OverlapRing | null = null, io: HostIO | null = null): Promise<StepResult> {
    const t0 = performance.now();
    const startedAt = wallClock();
    const n = this.r.gradientLength;
    const flat = this.stepBuffer(n + this.r.state.length + 1);
    transfers.reset();
    const stateBefore = await this.r.state.snapshot();
    // Buckets go while the one backward pass runs: with accumulated chunks the sum is ready only after the last.
    const buckets = overlap && this.r.step.native && this.accumulate === 1 ? new GradientBuckets(flat, n, overlap, this.feedback, this.r) : null;
    const slice = await this.slice(weight, x, y, flat, stateBefore, buckets, allReduce, step);
    if (!buckets) this.compress(flat);
    const slowdownMs = await slowDown(this.slowdown, performance.now() - t0);
    const t1 = performance.now();
    let reduced: Awaited<ReturnType<AllReduceFn>> & { overflow?: NonFinite };
    try {
      reduced = buckets ? { data: flat, stats: await finishBuckets(buckets, slice, flat) } : this.zero && io ? await this.zero.sum(flat, n, io, this.feedback?.wire(n)) : await this.reduce(flat, allReduce);
    } catch (err) {
      // The forward pass moved the statistics; a step that never completed must leave none behind
      // (an elastic survivor retries the step from here).
      this.r.state.set(stateBefore);
      throw err;
    }
    const t2 = performance.now();
    // flat was moved to the communication thread; the sum comes back in its own buffer.
    const overflow = this.zero ? reduced.overflow : this.overflowed(reduced.data);
    const skipped = reduced.data[reduced.data.length - 1] !== 0 || overflow !== undefined;
    this.keptOrDropped(!skipped);
    if (skipped) await this.skip(stateBefore);
    else await this.apply(reduced.data, stateBefore);
    // Whatever buffer the sum (or a sharded step's all-gather) came back in is ours again.
    this.spare = this.zero?.takeBuffer() ?? reduced.data;
    const t3 = performance.now();
    if (slice.failure !== undefined) throw survivedStepError(slice.failure, step);
    return {
      loss: slice.loss,
      startedAt,
      computeMs: t1 - t0,
      commMs: reduced.stats.commMs,
      waitMs: reduced.stats.waitMs,
      applyMs: t3 - t2 - (this.zero?.gatherMs ?? 0),
      slowdownMs,
      sentBytes: reduced.stats.bytesSent,
      ...(onDevice() ? { readbackMs: transfers.readbackMs, uploadMs: transfers.uploadMs } : {}),
      ...(slice.metrics ? { metrics: slice.metrics } : {}), ...slowReport(this.r),
      ...(slice.nonFinite ?? overflow ? { nonFinite: slice.nonFinite ?? overflow } : {}),
      ...(skipped ? { skipped } : {}),
    };
  }

  /** With 16-bit compression, an unflagged buffer's values rounded as the wire will carry them, the error kept for the next. */
  private compress(flat: Float32Array): void {
    if (this.feedback && flat[flat.length - 1] === 0) this.feedback.compress(flat.subarray(0, this.r.gradientLength));
  }

  /** [values | state | flag] summed with every replica's: as PowerSGD's factors, in 16 bits, or whole. */
  private reduce(flat: Float32Array, allReduce: AllReduceFn): ReturnType<AllReduceFn> {
    const n = this.r.gradientLength;
    return this.power ? this.power.allReduce(flat, n, (d) => allReduce(d)) : allReduce(flat, this.feedback?.wire(n));
  }

  /** A sum applied keeps its PowerSGD factors; a dropped one forgets them and the rounding error (which may hold Infinity). */
  private keptOrDropped(kept: boolean): void {
    if (kept) return this.power?.commit();
    this.feedback?.clear();
    this.power?.drop();
  }

  /**
   * A step of local SGD: the slice's own mean gradient through this replica's optimizer, alone;
   * on a sync step then the weights' change since the last sync, summed with every replica's
   * and applied by the outer optimizer (see LocalRounds).
   */
  private async trainLocal(local: LocalRounds, weight: number, x: Feed, y: Feed, allReduce: AllReduceFn, step: number, sync: "after" | "only" | undefined): Promise<StepResult> {
    const t0 = performance.now();
    const startedAt = wallClock();
    const n = this.r.gradientLength;
    transfers.reset();
    let slice: SliceOutcome = { loss: 0 };
    if (sync !== "only" && feedRows(x) > 0) {
      const stateBefore = await this.r.state.snapshot();
      const grad = this.stepBuffer(n + this.r.state.length + 1);
      slice = await this.slice(1, x, y, grad, stateBefore, null, allReduce, step);
      if (grad[grad.length - 1] !== 0) this.r.state.set(stateBefore);
      else this.update.apply(grad.subarray(0, n), this.learningRate);
      this.spare = grad;
    }
    if (sync !== "only") local.took(weight);
    const slowdownMs = await slowDown(this.slowdown, performance.now() - t0);
    const t1 = performance.now();
    const synced = sync ? await local.sync({ sum: (change) => (this.compress(change), this.reduce(change, allReduce)), overflowed: (sum) => this.overflowed(sum), kept: (kept) => this.keptOrDropped(kept), names: this.r.names, sizes: this.r.sizes }) : null;
    const t2 = performance.now();
    if (slice.failure !== undefined) throw survivedStepError(slice.failure, step);
    const nonFinite = slice.nonFinite ?? synced?.nonFinite;
    return {
      loss: slice.loss, startedAt, computeMs: t1 - t0, slowdownMs,
      commMs: synced?.stats.commMs ?? 0, waitMs: synced?.stats.waitMs ?? 0, sentBytes: synced?.stats.bytesSent ?? 0, applyMs: synced ? t2 - t1 - synced.stats.commMs - synced.stats.waitMs : 0,
      ...(slice.metrics ? { metrics: slice.metrics } : {}), ...slowReport(this.r),
      ...(nonFinite ? { nonFinite } : {}),
      ...(slice.nonFinite || synced?.skipped ? { skipped: true } : {}),
    };
  }

  /** A zeroed buffer of `length` floats: the last step's, when it fits. */
  private stepBuffer(length: number): Float32Array {
    const b = this.spare;
    this.spare = null;
    if (!b || b.length !== length) return new Float32Array(length);
    b.fill(0);
    return b;
  }

  /**
   * Fills this replica's part of the buffer: its weighted gradient and change of state, or
   * nothing but the flag when its slice cannot be learned from (non-finite) or it threw.
   */
  private async slice(weight: number, x: Feed, y: Feed, flat: Float32Array, stateBefore: Float32Array, buckets: GradientBuckets | null, allReduce: AllReduceFn, step: number): Promise<SliceOutcome> {
    const n = this.r.gradientLength;
    const stateNow = new Float32Array(this.r.state.length);
    const extra = { ...(buckets ? { ready: buckets.ready } : {}), ...(stateNow.length > 0 ? { stateNow } : {}) };
    const out = this.sync
      ? await this.sync.slice(this.r, x, y, weight, flat.subarray(0, n), extra.stateNow, allReduce, step)
      : this.accumulate > 1 ? await accumulatedSlice(this.r, this.accumulate, x, y, weight, flat.subarray(0, n), extra) : await checkedSliceGradient(this.r, x, y, weight, flat.subarray(0, n), extra);
    if (out.nonFinite || out.failure !== undefined) flat[flat.length - 1] = 1;
    else if (feedRows(x) > 0) this.r.state.writeChange(stateBefore, weight, flat.subarray(n, flat.length - 1), stateNow);
    return out;
  }

  /** Where a compressed sum of finite gradients overflowed the 16-bit format, if it did. */
  private overflowed(reduced: Float32Array): NonFinite | undefined {
    const n = this.r.gradientLength;
    if (!this.feedback || reduced[reduced.length - 1] !== 0 || !hasNonFinite(reduced.subarray(0, n))) return undefined;
    return { where: "compression", variable: nonFiniteVariable(reduced.subarray(0, n), this.r.names, this.r.sizes) ?? "?" };
  }

  /** The summed gradient through the optimizer, and the state to its replicas' mean. */
  private async apply(reduced: Float32Array, stateBefore: Float32Array): Promise<void> {
    const n = this.r.gradientLength;
    await this.back.taking(stateBefore);
    // First: a sharded step's all-gather may move `reduced` to the communication thread.
    this.r.state.set(stateBefore, reduced.subarray(n, reduced.length - 1));
    if (this.zero) await this.zero.apply(reduced.subarray(0, n), this.learningRate);
    else this.update.apply(reduced.subarray(0, n), this.learningRate);
  }

  /** A step every replica dropped still counts as taken: an elastic fit steps back from it to where it is. */
  private async skip(stateBefore: Float32Array): Promise<void> {
    this.r.state.set(stateBefore);
    await this.back.taking(stateBefore);
  }

  /** The model's weights; under ZeRO-3 gathered bucket by bucket, a collective every replica is asked for at once. */
  async weights(): Promise<{ tensors: Tensorlike[] }> {
    return { tensors: this.layers?.stage === 3 ? await this.layers.weightsOf(this.r.model) : await readWeights(this.r.model) };
  }

  /** Local SGD's outer state goes with it (a worker joining at a sync); a sharded replica's is laid flat over its ranges. */
  async exportState(): Promise<OptimizerState> {
    const sharded = await this.shardState();
    return sharded ? sharded.export() : this.local ? this.local.exportState(await this.update.exportState()) : this.update.exportState();
  }

  async importState(state: OptimizerState): Promise<void> {
    const sharded = await this.shardState();
    return sharded ? sharded.import(state) : this.local ? this.local.importState(state, (inner) => this.update.importState(inner)) : this.update.importState(state);
  }

  async stateRanges(): Promise<FlatRanges> {
    return (await this.shardState())?.ranges ?? [[0, this.r.gradientLength]];
  }

  private shardState(): Promise<ShardState | null> {
    return this.zero ? this.zero.ready(this.io()) : Promise.resolve(this.layers?.state() ?? null);
  }

  dispose(): void {
    this.shard = null;
    this.r.model.dispose();
    this.update.dispose();
    this.local?.dispose();
    this.zero?.dispose();
    this.layers?.dispose();
    this.r.compileOptimizer.dispose();
  }
}

function noLinks(): HostIO {
  throw new StateError("this worker has no links yet: a ZeRO-2 or ZeRO-3 replica is cut where its ring places it");
}
