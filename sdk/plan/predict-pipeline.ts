import { layersMs, type ModelProfile } from "./profile";
import {
  allReduceMs,
  basis,
  fullSharing,
  KERNELS_BWD,
  KERNELS_FWD,
  stepOverheadMs,
  type Prediction,
  type Speeds,
} from "./predict";
import type { Schedule } from "./schedules";
import { simulateShared, type ActionCost } from "./shared-simulation";

/**
 * A pipeline (or R of them): each stage's forward and backward per micro-batch (backward
 * recomputes the forward, as GPipe does) plus sending activations and gradients, laid out by the
 * schedule, then an all-reduce of each stage's gradients among its replicas.
 */
export function predictPipeline(
  o: {
    stages: ReadonlyArray<{
      from: number;
      to: number;
      flopsPerSample: number;
      layers: number;
      gradientBytes: number;
      outputElementsPerSample: number;
    }>;
    schedule: Schedule;
    microBatchSize: number;
    globalBatch: number;
    replicas: number;
    feedBytes: number;
    profile?: ModelProfile;
  },
  s: Speeds,
): Prediction {
  const mb = o.microBatchSize;
  const own = stageSeconds(o.stages, mb, s, o.profile);
  const send = o.stages.map((st) => (st.outputElementsPerSample * 4 * mb) / s.linkBytesPerSecond + s.latencySeconds);
  const last = o.stages.length - 1;
  // The last stage's forward is done inside its backward; other stages recompute it there.
  const cost = (stage: number, kind: "F" | "B"): ActionCost =>
    kind === "F"
      ? { computeMs: stage === last ? 0 : own[stage]!.forward * 1000, sendMs: stage === last ? 0 : send[stage]! * 1000 }
      : {
          computeMs: (own[stage]!.forward + own[stage]!.backward) * 1000,
          sendMs: stage > 0 ? send[stage - 1]! * 1000 : 0,
        };
  // One link alone is its two ends' threads on the machine: 2 x S/W of a pipeline's share of it.
  const workers = o.profile?.sharing?.workers ?? o.stages.length;
  const timed = simulateShared(
    o.schedule,
    (stage, a) => cost(stage, a.kind),
    stageSharing(s, o.profile, o.stages.length),
    { handOffLoad: 2, handOffAlone: (2 * o.stages.length) / workers },
  );
  const makespan = Math.max(...timed.flat().map((a) => a.end));
  const busy = timed.flat().reduce((n, a) => n + a.end - a.start, 0);
  const commMs = Math.max(...o.stages.map((st) => allReduceMs(st.gradientBytes, o.replicas, s)));
  const stepMs = makespan + commMs + stepOverheadMs(s, o.feedBytes);
  return {
    stepMs,
    computeMs: makespan,
    commMs,
    bubble: makespan > 0 ? 1 - busy / (o.stages.length * makespan) : 0,
    samplesPerSecond: (o.globalBatch / stepMs) * 1000,
    basis: basis(s, o.profile?.layers.length ? o.profile : undefined),
    timed: (o.profile?.layers.length ?? 0) > 0,
    actions: timed,
  };
}

/**
 * How much longer each computing stage or hand-off takes while `busy` of them run per pipeline.
 * The most crowded machine's W workers are spread over the S stages, so busy x W/S of its
 * threads run: its cores are shared among them (processor sharing) with the whole machine's
 * slowdown at W threads, and never fewer than one core (one thread alone runs as timed).
 */
function stageSharing(s: Speeds, profile: ModelProfile | undefined, stages: number): (busy: number) => number {
  const full = fullSharing(s, profile);
  const workers = profile?.sharing?.workers ?? Infinity;
  return (busy) => Math.min((full * busy) / stages, (workers * busy) / stages);
}

/** Each stage's forward, and its backward alone, for one micro-batch, in seconds: timed on a worker, or from FLOPs and kernel counts. */
function stageSeconds(
  stages: ReadonlyArray<{ from: number; to: number; flopsPerSample: number; layers: number }>,
  mb: number,
  s: Speeds,
  profile: ModelProfile | undefined,
): Array<{ forward: number; backward: number }> {
  return stages.map((st) => {
    const flops = (st.flopsPerSample * mb) / s.flopsPerSecond;
    // A profile of the step alone (taken for data parallelism) has no layer times.
    const timed = profile && profile.layers.length > 0 ? layersMs(profile, st.from, st.to, mb) : undefined;
    // A layer the profile could not time leaves its stage to FLOPs, not to NaN.
    const t = timed && Number.isFinite(timed.forwardMs) && Number.isFinite(timed.backwardMs) ? timed : undefined;
    const forward = t ? t.forwardMs / 1000 : flops + st.layers * KERNELS_FWD * s.kernelSeconds;
    const backward = t ? t.backwardMs / 1000 : 2 * flops + st.layers * KERNELS_BWD * s.kernelSeconds;
    return { forward, backward };
  });
}
