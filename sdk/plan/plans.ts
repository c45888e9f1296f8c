import type { BatchSplit } from "./batches";
import type { Compression } from "../protocol/wire-formats";
import type { ModelProfile } from "./profile";
import type { OverlapChoice } from "./overlap";
import type { CommHookSpec } from "../protocol/comm-hook-spec";
import type { OptimizerSpec } from "../protocol/optimizer-spec";
import type { LossName } from "../protocol/loss-names";
import type { MemoryEstimate, NativeMemory, ShardStage } from "./memory";
import type { ModelSummary } from "./model-summary";
import type { StageCost } from "./partition";
import type { Prediction, RingSpeed } from "./predict";
import type { Schedule } from "./schedules";
import type { HandlingCost, Seat } from "./core-load";

/**
 * Plans as plain data: which worker holds what, how the batch is split, what a step should cost.
 * Strategies make them (pure planners), runtimes execute them, viz draws them; none of those
 * needs the others to read one.
 */

/** Which worker does what under synchronous data parallelism. Pure data: printable, testable. */
export interface DataParallelPlan {
  readonly strategy: "data";
  /** Who reads the data: the driver sends each step's slices, or each worker reads its own. */
  readonly feed: "driver" | "workers";
  readonly worldSize: number;
  /** One replica per worker. */
  readonly replicas: number;
  /** Ranks in ring order; each sends to the next and receives from the one before. Workers sharing a machine are neighbours. */
  readonly ring: readonly number[];
  /** How the ring was ordered by machine, where machines are shared (null: one worker per machine, or all on one). */
  readonly ringNote: string | null;
  /** `slowdown`: a straggler made on purpose (.slowdown()): it waits (slowdown - 1) x its compute after computing (1: not slowed). */
  readonly workers: ReadonlyArray<{
    rank: number;
    replica: number;
    ringPosition: number;
    layers: "all";
    params: number;
    slowdown: number;
  }>;
  readonly model: ModelSummary;
  /** Bytes of the flat float32 gradient buffer all-reduced each step. */
  readonly gradientBytes: number;
  /** How the gradient travels (a comm hook): 16-bit floats with error feedback, or PowerSGD's low-rank factors; null: float32, whole. */
  readonly hook: CommHookSpec | null;
  /** Whether the gradient is all-reduced in buckets during the backward pass (native data plane and native step only), and why. */
  readonly overlap: OverlapChoice;
  /** BatchNormalization's statistics: each replica's slice's ("replica"), or the global batch's ("sync"). */
  readonly batchNorm: "replica" | "sync";
  /** Local SGD / DiLoCo: replicas step alone and all-reduce their weights' change every `every` steps (and at each epoch's end), which `outer` applies; null: every step. */
  readonly sync: { readonly every: number; readonly outer: OptimizerSpec } | null;
  /** Sharded data parallelism: "optimizer" (ZeRO-1), each replica holding its shard's optimizer state; "gradients" (ZeRO-2), its part of every layer's gradient too; "parameters" (ZeRO-3), and of its weights; null: every replica holds all of it. */
  readonly shard: ShardStage | null;
  /** ZeRO-2 and -3: the layers grouped into buckets of up to `capBytes`, each bucket's collectives one (shard-buckets.ts); `why` where a memory cap made them smaller than the default; null otherwise. */
  readonly buckets: {
    readonly capBytes: number;
    readonly count: number;
    readonly largestBytes: number;
    readonly why?: string;
  } | null;
  readonly allReduce: {
    readonly algorithm: "ring";
    /** Bytes each rank sends per step: 2(N-1)/N x the gradient's bytes on the wire (reduce-scatter + all-gather). */
    readonly bytesSentPerRank: number;
  };
  /** Shard sizes of a full global batch, and the splits a fit executes, when the plan was made for a batch size. */
  readonly batch: PlanBatch | null;
  /** What each replica holds (estimate; parts needing a batch size or optimizer are null without them). */
  readonly memory: MemoryEstimate;
  /** Each rank's device, when the plan was made by a launched cluster. */
  readonly devices: readonly PlanDevice[] | null;
  /** Step time and throughput predicted from the cost model and the workers' measured speeds. */
  readonly prediction: Prediction | null;
  /** Elastic training: carry on without lost workers while at least minWorkers remain (null: a lost worker ends the fit). */
  /** `replace`: new workers are started for lost ones (once the `spares` are taken). */
  readonly elastic: {
    readonly minWorkers: number;
    readonly replace: boolean;
    readonly spares: number;
    /** A worker slower than `slowerThan` x the others' median for `steps` steps in a row is let go. */
    readonly evict: { readonly slowerThan: number; readonly steps: number } | null;
  } | null;
  /** Why this strategy was chosen, when a planner chose it (strategy "auto"); explain() adds what follows from the plan. */
  readonly reasons: readonly string[];
}

/** A global batch as a plan splits it: the full batch's slices, and every split a fit meets (see plan/batches.ts). */
export interface PlanBatch {
  readonly globalBatch: number;
  readonly perReplica: readonly number[];
  readonly splits: readonly BatchSplit[];
}

/** What a worker computes on, as its worker reported when it joined, and the driver's link to it. */
export interface PlanDevice {
  backend: string;
  device: string;
  memoryBytes: number;
  /** Matrix-multiply speed measured at join, GFLOP/s. */
  gflops?: number;
  /** TF.js's cost per kernel measured at join, microseconds. */
  kernelOverheadUs?: number;
  /** The driver's link to it, bytes/s. */
  linkBytesPerSecond?: number;
  /** The driver's link to it: one-way latency of a message, ms. */
  linkLatencyMs?: number;
  /** A GPU worker: its adapter (and whether it is a software one), and its measured host-device transfer rate, bytes/s. */
  gpu?: { name: string; software: boolean };
  deviceBytesPerSecond?: number;
  /** The machine it runs on and that machine's cores: workers beyond the cores share them. */
  host?: string;
  /** A browser tab: reached through the driver's relay. */
  tab?: boolean;
  cpus?: number;
  /** The cores it may run on (its affinity), where it said. */
  cores?: readonly number[];
  /** What receiving a message costs its process's CPU, ms: per message, and per MB more (from the link probes; a tab cannot say). */
  handling?: HandlingCost;
}

export interface PlanOptions {
  /** Global batch: the plan splits it among replicas and checks that it divides. */
  batchSize?: number;
  /** Samples in the dataset (a fit's plan): the plan also splits an epoch's shorter last batch. */
  datasetSize?: number;
  /** For the optimizer-state part of the memory estimate. */
  optimizer?: OptimizerSpec;
  /** The fit's loss (strategy "auto" asks whether the native step computes it, which ZeRO-2 and -3 need). */
  loss?: LossName;
  /** Why the model's layers cannot train inside meshtrain's native step, null where they can (ZeRO-2 and -3 need it; the driver compiles the model to know). */
  nativeLayers?: string | null;
  /** What the native step's arrays take, where the model trains by it (the driver compiles the model to know): the memory estimate's activations. */
  nativeMemory?: NativeMemory | null;
  /** Each rank's device (a launched cluster knows them). */
  devices?: readonly PlanDevice[];
  /** Why this strategy was chosen (strategy "auto" says). */
  reasons?: readonly string[];
  /** The data ring's all-reduce as measured on it (a launched cluster with strategy "data" measures it before planning). */
  ring?: RingSpeed;
  /** The model's layers and replica step timed on a worker: predictions rest on it instead of FLOPs. */
  profile?: ModelProfile;
  /** Each parameter server's device and link (strategy "ps"). */
  serverDevices?: readonly PlanDevice[];
  /** Where the driver runs and what its messages cost its CPU, once it probed a link: a server's plan counts the cores it shares. */
  driver?: Seat;
}

/** One variable as a server holds it: trainable, or state (a float non-trainable weight). */
export interface ShardVariable {
  /** Its index in the model's trainable weights (ModelSummary.variables), or in its state (ModelSummary.state). */
  readonly index: number;
  readonly name: string;
  readonly layer: number;
  readonly shape: readonly number[];
  readonly bytes: number;
}

/** Which worker does what with parameter servers. Pure data: printable, testable. */
export interface PsPlan {
  readonly strategy: "ps";
  /** "async": each push applied on arrival; "sync": one summed update per step. */
  readonly mode: "async" | "sync";
  /** Async: the most steps a worker may run ahead of the slowest (stale-synchronous parallel); null: unbounded. */
  readonly staleness: number | null;
  /** Workers (the servers are not ranks). */
  readonly worldSize: number;
  readonly replicas: number;
  /** Each server's trainable variables (it applies the optimizer to them) and state (it combines the workers' changes). */
  readonly servers: ReadonlyArray<{
    readonly index: number;
    readonly variables: readonly ShardVariable[];
    readonly state: readonly ShardVariable[];
    readonly bytes: number;
  }>;
  readonly workers: ReadonlyArray<{
    readonly rank: number;
    readonly slowdown: number;
    readonly layers: "all";
    readonly params: number;
  }>;
  readonly model: ModelSummary;
  /** Bytes of float32 gradients each worker pushes per step (and parameters it pulls). */
  readonly gradientBytes: number;
  /** Pushes carry the gradient as 16-bit floats with error feedback (pulls stay float32); null: float32. */
  readonly compression: Compression | null;
  /** Sync: carry on without lost workers while at least minWorkers remain (null: a lost worker ends a sync fit). */
  readonly elastic: { readonly minWorkers: number } | null;
  /** Each worker's slice of a full global batch, and the splits a fit executes. */
  readonly batch: PlanBatch | null;
  /** What each worker holds (estimate). */
  readonly memory: MemoryEstimate;
  readonly devices: readonly PlanDevice[] | null;
  /** From the workers' and servers' measured links and the timed replica step (null where they were not measured). */
  readonly prediction: Prediction | null;
  readonly reasons: readonly string[];
}

/** Which stage strategy made a pipeline plan: one batch at a time, micro-batches, or replicated pipelines. */
export type PipelineKind = "model" | "pipeline" | "hybrid";

/** One stage of a pipeline plan: its layers, shapes in and out, memory and cost. */
export interface StagePlan extends StageCost {
  stage: number;
  layerNames: string[];
  /** Per-sample shapes of what the stage takes and gives (batch dimension left out). */
  inputShape: number[];
  outputShape: number[];
  /** The model inputs (by index) the driver hands this stage, and the model outputs (by index) whose loss it computes. */
  feeds: number[];
  heads: number[];
  /** Most micro-batches whose inputs the stage holds at once under the schedule. */
  inFlight: number;
}

/** Model, pipeline and hybrid parallelism: which worker holds which layers, and the schedule. */
export interface PipelinePlan {
  readonly strategy: PipelineKind;
  readonly worldSize: number;
  readonly stages: number;
  readonly replicas: number;
  readonly microBatches: number;
  readonly schedule: Schedule;
  /** ranks[r][s]: the worker holding stage s of replica r (r * stages + s). */
  readonly ranks: readonly (readonly number[])[];
  readonly stagePlans: readonly StagePlan[];
  /** Stage ranges set with plan.place(), as [stage, [from, to]] pairs; the partitioner chose the others. */
  readonly placed: ReadonlyArray<readonly [number, readonly [number, number]]>;
  readonly model: ModelSummary;
  /** With the largest micro-batch, for the memory estimate. */
  readonly batch: (PlanBatch & { readonly microBatch: number }) | null;
  readonly optimizer: OptimizerSpec | null;
  readonly devices: readonly PlanDevice[] | null;
  readonly prediction: Prediction | null;
  /** Why this strategy and shape were chosen, when a planner chose them (strategy "auto"); explain() adds what follows from the plan. */
  readonly reasons: readonly string[];
}

/** Any strategy's plan. `strategy` says which shape it has (auto makes a data, pipeline or hybrid plan). */
export type PlanData = DataParallelPlan | PsPlan | PipelinePlan;

/** What a plan from plan() can do besides being data: explain, place, draw, print. */
export interface PlanMethods {
  /** Why the plan is what it is: the choices made, with their numbers. */
  explain(): string;
  /**
   * Pins layers [from, to) to the stage that worker `rank` runs (in a hybrid, every replica of
   * that stage); the partitioner splits the other layers around it. Returns a new plan; pass it
   * to fit as `{ plan }`. Only model, pipeline and hybrid plans have stages to place.
   */
  place(layers: readonly [number, number], rank: number): Plan;
  /** The placement diagram as SVG text. */
  draw(): string;
  /** The plan as text (the same as formatting it). */
  toString(): string;
}

/** What plan() returns: plain data (JSON.stringify gives the data) with non-enumerable methods. */
export type Plan = PlanData & PlanMethods;
