import type { SlowStep } from "../protocol/slow-step";
import type { Origin } from "../config/compiled";
import type { LossName } from "../protocol/loss-names";
import type { OptimizerSpec } from "../protocol/optimizer-spec";
import type { Plan } from "../plan/plans";
import type { WorkerSnapshot } from "../config/worker-snapshot";
import type { DataPlaneChoice } from "../protocol/data-plane";
import type { ReplicaStepChoice } from "../protocol/profile-messages";
import type { WorkerMemory } from "../protocol/worker-memory";

/**
 * What a fit records, as plain data: the driver's runtimes write these, TrainingRun, metrics
 * and viz read them. Times are milliseconds.
 */

/** One step as recorded by the driver. Times are milliseconds. */
export interface WorkerStepRecord {
  rank: number;
  /** Forward, backward and the optimizer update on this worker. */
  computeMs: number;
  /** Time in the all-reduce after the first chunk arrived: moving and adding bytes. */
  commMs: number;
  /** Time in the all-reduce before the first chunk arrived: waiting for slower peers. */
  waitMs: number;
  /** The optimizer update alone (part of computeMs, after the all-reduce). */
  applyMs: number;
  /**
   * When this worker started the step, in ms since the fit started, on the driver's clock
   * (the worker's clock shifted by the offset estimated when it joined).
   */
  startMs: number;
  /** Pipeline strategies: the stage and replica this worker runs. */
  stage?: number;
  replica?: number;
  /** Pipeline strategies: when each forward (F) and backward (B) of a micro-batch ran, ms from startMs. */
  actions?: Array<{ kind: "F" | "B"; micro: number; start: number; end: number }>;
  /** ZeRO-2 and -3: each bucket's all-gather and reduce-scatter (layer: its first layer's index among the layers with weights; last: its last, where it holds several), ms from startMs. */
  collectives?: Array<{
    kind: "all-gather" | "reduce-scatter";
    layer: number;
    last?: number;
    start: number;
    end: number;
  }>;
  /** Pipeline strategies: the most micro-batches whose inputs this worker held at once. */
  inFlightMax?: number;
  /** A straggler made on purpose (.slowdown()): time it waited after computing, part of computeMs. */
  slowdownMs?: number;
  /** A worker on a GPU: reading the step's results back from the device (part of computeMs), ms. */
  readbackMs?: number;
  /** Its slice ran more than twice what the model's FLOPs predict: where the time went (once a fit, a few steps in). */
  slow?: SlowStep;
  /** A worker on a GPU: handing the update to the device (part of applyMs), ms. */
  uploadMs?: number;
  /** Bytes this worker sent in the step's all-reduce (data: ring frames, headers included) or pushes (ps: their tensors' bytes). */
  sentBytes?: number;
}

/** One step as the driver recorded it: samples, wall time, loss, each rank's times, the straggler. Times are milliseconds. */
export interface StepRecord {
  /** Step number within the fit, from 0. */
  step: number;
  epoch: number;
  /** Mean loss over the global batch (replicas' slice losses weighted by slice size). */
  loss: number;
  /** Samples in this step's global batch. */
  samples: number;
  /** Wall time from the previous step's completion (or the fit's start) to this one's, at the driver. */
  ms: number;
  /** When this step completed, in ms since the fit started. */
  endMs: number;
  workers: WorkerStepRecord[];
  /**
   * The rank whose forward and backward pass ended last: the one the others waited for. (Async
   * parameter servers, where nobody waits: the rank whose pushes in the round took longest.)
   */
  straggler: number;
  /** Pipeline strategies: the share of stage time spent idle in this step (measured). */
  bubble?: number;
  /** The model's compiled metrics over the global batch (e.g. acc), weighted as the loss is. */
  metrics?: Record<string, number>;
  /** Where workers found NaN or Infinity in this step. */
  nonFinite?: NonFiniteReport[];
  /** Under a learning-rate schedule (fit option schedule): the rate this step's update used. */
  learningRate?: number;
  /**
   * The step's update was dropped on every worker (fit option nonFinite "skip"). Async parameter
   * servers drop single pushes: a round is skipped when all of its pushes were; its loss and
   * metrics are those of the pushes applied.
   */
  skipped?: boolean;
}

/** One worker's finding of a non-finite value: in its input batch, its loss, or a variable's gradient. */
export interface NonFiniteReport {
  rank: number;
  where: "input" | "loss" | "gradient" | "compression";
  variable?: string;
}

/** One push as the driver recorded it: which parameters it was computed on, and how stale it was. */
export interface PushRecord {
  rank: number;
  /** The worker's own step count when it computed this push, from 0. */
  clock: number;
  epoch: number;
  samples: number;
  /** Mean loss over the slice, on the parameters pulled. */
  loss: number;
  /** The version (updates applied) of server 0's shard it pulled. */
  version: number;
  /** Updates other pushes made to the parameters between this pull and this push (the most over servers). */
  staleness: number;
  /** How many steps ahead of the slowest live worker this worker was when it started (bounded by staleness k). */
  lead: number;
  /** When the worker started it and when the driver heard it was done, in ms since the fit started. */
  startMs: number;
  endMs: number;
  computeMs: number;
  pullMs: number;
  pushMs: number;
  /** Time the servers held the pull back for other workers' pushes (sync). */
  waitMs: number;
  slowdownMs: number;
  /** Bytes the push carried (its tensors' bytes). */
  sentBytes?: number;
  /** The model's compiled metrics over the slice. */
  metrics?: Record<string, number>;
  /** Where the worker found NaN or Infinity; the servers dropped the push. */
  nonFinite?: NonFiniteReport;
}

/** A worker that left while the others carried on. */
export interface Departure {
  rank: number;
  address: string;
  /** When the driver learned of it, in ms since the fit started, and the step (round) it was in. */
  atMs: number;
  step: number;
  cause: string;
  /** Slices it was working on, and what became of them: handed to other workers, or already applied by the servers. */
  requeued: number;
  alreadyApplied: number;
  /** Pushes some servers applied and others never received (it died between them). */
  partial: number;
}

/** What a parameter-server fit adds to its run record. */
export interface PsRunRecord {
  mode: "async" | "sync";
  staleness: number | null;
  pushes: PushRecord[];
  departures: Departure[];
  /** Each server's version at the end: the updates it applied. */
  serverVersions: number[];
}

/** A worker that left or joined an elastic fit. */
export interface MembershipChange {
  change: "left" | "joined";
  rank: number;
  address: string;
  /** When the driver learned of it, ms since the fit started, and the step training went on from. */
  atMs: number;
  step: number;
  /** Why it left. */
  cause?: string;
  /** Workers training after the change. */
  workers: number;
  /** A parameter server's (rank: its index), not a worker's. */
  server?: true;
}

/** What a strategy's runtime returns for one fit: plain data. */
/**
 * What ended a fit: its last step ("done"), a callback that set model.stopTraining (early
 * stopping), a stop asked for (its AbortSignal, an interrupt, cluster.close()), or an error.
 */
export type FitEnd =
  { by: "done" } | { by: "callback" } | { by: "stop"; reason: string } | { by: "error"; error: string };

/** A fit's end in words, as titles and summaries give it. */
export function describeEnd(e: FitEnd): string {
  switch (e.by) {
    case "done":
      return "done";
    case "callback":
      return "ended by a callback (model.stopTraining)";
    case "stop":
      return `stopped: ${e.reason}`;
    case "error":
      return `stopped by an error: ${e.error}`;
  }
}

/**
 * How a data-parallel fit timed overlap both ways (its steps `steps`, inclusive, alternating;
 * median ms of each way), which it kept and from which step; or why it timed nothing.
 */
export type OverlapTrialRecord =
  | { kept: boolean; steps: [number, number]; onMs: number; offMs: number; from?: number }
  | { kept: false; refused: string }
  | { kept: false; skipped: string };

/** Everything a fit recorded: each step, the plan, the workers, what ended it; a TrainingRun is made from it. */
export interface RunRecord {
  history: readonly StepRecord[];
  /** What ended the fit (absent in records made before it was kept: done). */
  ended?: FitEnd;
  plan: Plan;
  workers: readonly WorkerSnapshot[];
  seed: number;
  epochs: number;
  wallMs: number;
  /** Strategy "ps": every push, every departure, the servers' versions. */
  ps?: PsRunRecord;
  /** Elastic data parallelism: every worker that left or joined. */
  membership?: MembershipChange[];
  /** checkpoint.every "auto": the interval chosen, from the first checkpoint's time and the steps' (ms). */
  checkpoints?: { every: number; saveMs: number; stepMs: number };
  /** What the run trained with and where each came from (fit options, model.compile or the defaults). */
  training?: TrainingSetup;
  /** What the workers printed during the fit. */
  logs?: readonly LogLine[];
  /** Where the all-reduces travelled, and why there. */
  dataPlane?: DataPlaneChoice;
  /** How the replicas computed their gradients (data and ps strategies). */
  replicaStep?: ReplicaStepChoice;
  /** Data parallelism, overlap "auto" with no core to spare: the fit's first steps timed both ways. */
  overlapTrial?: OverlapTrialRecord;
  /** Each epoch's validation (fit options validationData, validationSplit). */
  validation?: readonly EpochValidation[];
  /** What each worker and server still there at the end measured of its memory during the fit. */
  memory?: readonly MemberMemory[];
}

/** One member's memory during a fit, as it measured it (see WorkerMemory). */
export interface MemberMemory extends WorkerMemory {
  rank: number;
  role: "worker" | "ps";
}

/** One epoch's validation, as model.fit's History has it: val_loss and val_ of each compiled metric. */
export interface EpochValidation {
  epoch: number;
  logs: Record<string, number>;
}

/** One line a worker (or parameter server) printed, as the driver received it. */
export interface LogLine {
  /** "rank 1" or "server 0": the prefix it was shown with. */
  readonly from: string;
  readonly stream: "stdout" | "stderr";
  readonly text: string;
  /** When the driver received it, in ms since the Unix epoch. */
  readonly time: number;
}

/** How a run was trained: optimizer, loss and metrics, and where each came from (model.compile or fit's options). */
export interface TrainingSetup {
  optimizer: OptimizerSpec;
  loss: LossName;
  metrics: string[];
  origins: { optimizer: Origin; loss: Origin };
}

/** Per epoch, as TF.js model.fit's History: `epoch` numbers and, per key (loss, acc, ...), the epoch's mean. */
export interface EpochHistory {
  epoch: number[];
  history: Record<string, number[]>;
}
