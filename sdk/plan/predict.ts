import { simulate, type Schedule } from "./schedules";

/** What a plan's step time is predicted from: measured on the workers and links. */
export interface Speeds {
  /** Matrix-multiply speed, FLOP/s (the slowest worker's). */
  flopsPerSecond: number;
  /** TF.js's fixed cost per kernel, seconds. */
  kernelSeconds: number;
  /** The slowest link's bandwidth, bytes/s. */
  linkBytesPerSecond: number;
  /** The slowest link's one-way latency per message, through both ends' threads, seconds. */
  latencySeconds: number;
}

export interface Prediction {
  stepMs: number;
  samplesPerSecond: number;
  computeMs: number;
  commMs: number;
  /** Share of stage time spent idle (pipelines), from the schedule simulated with these costs. */
  bubble: number;
  /** What the numbers rest on, in words. */
  basis: string;
  /** Data parallelism on several workers: the same global batch on one worker, to compare with. */
  oneWorker?: Pick<Prediction, "stepMs" | "computeMs" | "commMs" | "samplesPerSecond" | "bubble" | "basis">;
}

/** Kernels TF.js runs per layer per sample pass, roughly: forward ~3, backward ~6. */
const KERNELS_FWD = 3;
const KERNELS_BWD = 6;

/** Ring all-reduce: 2(N-1) phases, each a message of bytes/N to the next rank. */
function allReduceMs(bytes: number, members: number, s: Speeds): number {
  return members > 1 ? (((2 * (members - 1)) / members) * (bytes / s.linkBytesPerSecond) + 2 * (members - 1) * s.latencySeconds) * 1000 : 0;
}

/** Every step the driver sends the step and waits for the replies: a round trip. */
function stepOverheadMs(s: Speeds): number {
  return 2 * s.latencySeconds * 1000;
}

/** Data parallelism: one replica's forward and backward on its slice, then a ring all-reduce. */
export function predictData(o: { flopsPerSample: number; layers: number; gradientBytes: number; globalBatch: number; replicas: number }, s: Speeds): Prediction {
  const perReplica = o.globalBatch / o.replicas;
  const computeMs = ((3 * o.flopsPerSample * perReplica) / s.flopsPerSecond + o.layers * (KERNELS_FWD + KERNELS_BWD) * s.kernelSeconds) * 1000;
  const commMs = allReduceMs(o.gradientBytes, o.replicas, s);
  const stepMs = computeMs + commMs + stepOverheadMs(s);
  return { stepMs, computeMs, commMs, bubble: 0, samplesPerSecond: (o.globalBatch / stepMs) * 1000, basis: basis(s) };
}

/**
 * A pipeline (or R of them): each stage's forward and backward per micro-batch (backward
 * recomputes the forward, as GPipe does) plus sending activations and gradients, laid out by the
 * schedule, then an all-reduce of each stage's gradients among its replicas.
 */
export function predictPipeline(
  o: {
    stages: ReadonlyArray<{ flopsPerSample: number; layers: number; gradientBytes: number; outputElementsPerSample: number }>;
    schedule: Schedule;
    microBatchSize: number;
    globalBatch: number;
    replicas: number;
  },
  s: Speeds,
): Prediction {
  const mb = o.microBatchSize;
  const fwd = o.stages.map((st) => (st.flopsPerSample * mb) / s.flopsPerSecond + st.layers * KERNELS_FWD * s.kernelSeconds);
  const send = o.stages.map((st) => (st.outputElementsPerSample * 4 * mb) / s.linkBytesPerSecond + s.latencySeconds);
  const last = o.stages.length - 1;
  // The last stage's forward is done inside its backward; other stages recompute in backward.
  const cost = (stage: number, kind: "F" | "B"): number =>
    kind === "F"
      ? (stage === last ? 0 : fwd[stage]!) + (stage < last ? send[stage]! : 0)
      : 3 * fwd[stage]! + (o.stages[stage]!.layers * KERNELS_BWD - o.stages[stage]!.layers * KERNELS_FWD) * s.kernelSeconds + (stage > 0 ? send[stage - 1]! : 0);
  const timed = simulate(o.schedule, (stage, a) => cost(stage, a.kind) * 1000);
  const makespan = Math.max(...timed.flat().map((a) => a.end));
  const busy = timed.flat().reduce((n, a) => n + a.end - a.start, 0);
  const commMs = Math.max(...o.stages.map((st) => allReduceMs(st.gradientBytes, o.replicas, s)));
  const stepMs = makespan + commMs + stepOverheadMs(s);
  return {
    stepMs,
    computeMs: makespan,
    commMs,
    bubble: makespan > 0 ? 1 - busy / (o.stages.length * makespan) : 0,
    samplesPerSecond: (o.globalBatch / stepMs) * 1000,
    basis: basis(s),
  };
}

function basis(s: Speeds): string {
  return `${(s.flopsPerSecond / 1e9).toFixed(1)} GFLOP/s matrix speed, ${(s.kernelSeconds * 1e6).toFixed(1)} us per TF.js kernel, ${(s.linkBytesPerSecond / 1e6).toFixed(0)} MB/s links with ${(s.latencySeconds * 1e3).toFixed(2)} ms latency (measured when the workers joined)`;
}
