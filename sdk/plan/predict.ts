import { atBatch, layersMs, type ModelProfile } from "./profile";
import type { TimedAction } from "./schedules";
import type { DataPlanePath } from "../protocol/data-plane";
import type { Seat } from "./core-load";
import { dataCoreLoad, type RingCpu } from "./ring-cpu";
import { perSample } from "./per-sample";

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
  /** Workers per core on the most crowded machine (at least 1): all computing at once, each takes that much longer (a profile's measured sharing replaces it). */
  coreSharing: number;
  /** The data ring's own all-reduce speed, where it was measured: data-parallel plans price the all-reduce by it instead of by the driver's links. */
  ring?: RingSpeed;
  /** Workers on GPUs: the slowest one's host-device transfer rate, bytes/s (each step reads its gradient back and uploads the sum). */
  deviceBytesPerSecond?: number;
}

/**
 * A data ring's all-reduce as measured on the ring itself (cluster/ring-probe.ts), as the ring
 * formula's terms: the bandwidth of one hop and the latency of one of its 2(N-1) phases.
 */
export interface RingSpeed {
  readonly members: number;
  readonly path: DataPlanePath;
  readonly linkBytesPerSecond: number;
  readonly latencySeconds: number;
  /** What an all-reduce cost each member's process in CPU time, by rank, where every member could say. */
  readonly cpu?: readonly RingCpu[];
  /**
   * What a step costs around its all-reduce, seconds: the driver's messages to the members and
   * back, the members starting apart, and an all-reduce that starts cold. Timed as rounds of an
   * all-reduce driven as steps are, less what the ring's terms price it at (driver/ring-probe.ts).
   */
  readonly roundSeconds?: number;
  /**
   * How much faster than the ring's terms price it the round's all-reduce ran, as its last member
   * to enter timed it, seconds: a link that lets a burst through after idle (a token bucket, a
   * cloud VM's burst). The round used it, and so does a step whose all-reduce is as large; a
   * smaller one saves at most its own time on the wire (stepRoundSeconds).
   */
  readonly burstSeconds?: number;
  /** Why the ring's all-reduces travel on `path`, where both planes were timed to choose it (driver/ring-planes.ts). */
  readonly chosen?: string;
}

/**
 * What a step with `bytes` to all-reduce pays around its all-reduces on a ring whose rounds were
 * timed: the rounds' cost, plus the burst the round's all-reduce used that a step's smaller one
 * cannot (it saves at most its own bytes' time at the ring's rate). On 1 Gbit/s links shaped with
 * a 1 ms bucket (bench:network, 2026-11-29, the small MLP on 2 workers), the round's 1 MiB all-reduce ran
 * 0.7-0.8 ms under the ring's price and the rounds read 0.6-1.2 ms, while PowerSGD's steps (31 KB)
 * paid 1.3-1.9 ms around their all-reduces, as the round's time beyond its all-reduce (1.4-1.8) said.
 */
export function stepRoundSeconds(ring: RingSpeed, bytes: number): number | undefined {
  if (ring.roundSeconds === undefined) return undefined;
  const wireSeconds =
    allReduceMs(bytes, ring.members, { linkBytesPerSecond: ring.linkBytesPerSecond, latencySeconds: 0 }) / 1000;
  return ring.roundSeconds + Math.max(0, (ring.burstSeconds ?? 0) - wireSeconds);
}

/** A plan's predicted step: compute, communication and idle time, throughput, and what it rests on (measured or estimated). */
export interface Prediction {
  stepMs: number;
  samplesPerSecond: number;
  computeMs: number;
  commMs: number;
  /** Share of stage time spent idle (pipelines), from the schedule simulated with these costs. */
  bubble: number;
  /** What the numbers rest on, in words. */
  basis: string;
  /** True when the compute was timed on a worker (a profile), not estimated from the model's FLOPs. */
  timed?: boolean;
  /** Pipelines: each stage's forwards and backwards as the schedule was simulated, ms from the step's start. */
  actions?: TimedAction[][];
  /** Data parallelism on several workers: the same global batch on one worker, to compare with. */
  oneWorker?: Pick<Prediction, "stepMs" | "computeMs" | "commMs" | "samplesPerSecond" | "bubble" | "basis" | "timed">;
}

/** Bytes of one sample's input and label, which the driver sends when it feeds the data. */
export function sampleBytes(model: {
  inputShape: ReadonlyArray<number | null>;
  outputShape: ReadonlyArray<number | null>;
}): number {
  return 4 * (perSample(model.inputShape) + perSample(model.outputShape));
}

/** Kernels TF.js runs per layer per sample pass, roughly: forward ~3, backward ~6. */
export const KERNELS_FWD = 3;
export const KERNELS_BWD = 6;

/**
 * Ring all-reduce: 2(N-1) phases, each a message of bytes/N to the next rank, at the speeds of
 * `link`; `rounds` all-reduces of these bytes in all (each its own phases' latency).
 */
export function allReduceMs(
  bytes: number,
  members: number,
  link: { linkBytesPerSecond: number; latencySeconds: number },
  rounds = 1,
): number {
  return members > 1
    ? (((2 * (members - 1)) / members) * (bytes / link.linkBytesPerSecond) +
        rounds * 2 * (members - 1) * link.latencySeconds) *
        1000
    : 0;
}

/**
 * Every step the driver sends the step and waits for the replies (a round trip, or as timed in
 * step-shaped rounds on a data ring: `roundSeconds`), and with the data fed by the driver, sends
 * every sample's input and label over its links one after another.
 */
export function stepOverheadMs(s: Speeds, feedBytes: number, roundSeconds = 2 * s.latencySeconds): number {
  return (roundSeconds + feedBytes / s.linkBytesPerSecond) * 1000;
}

/**
 * Data parallelism: one replica's step on its slice (timed on a worker when a profile was
 * taken, else from FLOPs and kernel counts), then a ring all-reduce of `gradientBytes` a step,
 * in `allReduces` of them (PowerSGD: 2, P then Q; synced every H steps: 1/H). No step is shorter
 * than its busiest core's CPU time (ring-cpu.ts), where the ring probe timed what its
 * all-reduces cost each worker's CPU and `seats` say where the workers run. Measured between
 * namespace hosts at 10 Gbit/s (bench:network, 2026-11-27), the 11.4M MLP over the WebSocket
 * plane: the ring's wall time priced its all-reduce right, yet each step took 1.2-1.4x the price,
 * its compute stretched. The likely cause: the ring's work in JavaScript and the collection of
 * its buffers run on the one core each worker has (counted by thread over a fit on loopback, that
 * plane's communication and V8 helper threads took 1.9-2.7x the compute thread's CPU time).
 */
export function predictData(
  o: {
    flopsPerSample: number;
    layers: number;
    gradientBytes: number;
    globalBatch: number;
    replicas: number;
    feedBytes: number;
    profile?: ModelProfile;
    allReduces?: number;
    also?: ReplicaWork;
    seats?: { workers: readonly Seat[]; driver?: Seat };
  },
  s: Speeds,
): Prediction {
  const step = replicaComputeMs(o, o.globalBatch / o.replicas, s);
  // Work of the replica's own beside its step (PowerSGD's), slowed as the step is by shared cores.
  const computeMs = step.computeMs + (o.also ? o.also.ms * (o.replicas > 1 ? fullSharing(s, o.profile) : 1) : 0);
  // The ring measured itself where it could; else the driver's links stand in for it.
  const linksCommMs = allReduceMs(o.gradientBytes, o.replicas, s.ring ?? s, o.allReduces);
  // A ring's members start a step apart, which a round timed on the ring says; one worker alone does not.
  const round = o.replicas > 1 && s.ring ? stepRoundSeconds(s.ring, o.gradientBytes) : undefined;
  const linksMs = computeMs + linksCommMs + stepOverheadMs(s, o.feedBytes, round);
  // A step's compute is priced as the workers run it together; k workers to a core each spend 1/k of that wall time on it.
  const core =
    o.seats && o.replicas > 1
      ? dataCoreLoad(
          {
            computeMs: computeMs / s.coreSharing,
            bytes: o.gradientBytes,
            allReduces: o.allReduces ?? 1,
            replicas: o.replicas,
            feedBytes: o.feedBytes,
          },
          s.ring?.cpu,
          o.seats,
        )
      : undefined;
  const stepMs = Math.max(linksMs, core?.ms ?? 0);
  return {
    stepMs,
    computeMs,
    commMs: linksCommMs + stepMs - linksMs,
    bubble: 0,
    samplesPerSecond: (o.globalBatch / stepMs) * 1000,
    basis:
      basis(s, step.timed ? o.profile : undefined, o.replicas > 1) +
      dataBasisTail(o.also, s.ring, round, core, linksMs),
    timed: step.timed,
  };
}

/** What a data-parallel step's basis says beyond the speeds: the rounds, the replica's own work, the busiest core. */
function dataBasisTail(
  work: ReplicaWork | undefined,
  ring: RingSpeed | undefined,
  round: number | undefined,
  core: { ms: number; names: readonly string[] } | undefined,
  linksMs: number,
): string {
  const also = work
    ? `, ${work.what} ${work.ms.toFixed(1)} ms a step (${work.timed ? "timed on a worker" : "from its FLOPs"})`
    : "";
  const cpu = core
    ? `, and each worker's CPU for its all-reduces as the ring probe timed it${core.ms >= linksMs ? `; the busiest core bounds it: ${namesOf(core.names)} on it spend ${core.ms.toFixed(1)} ms of CPU a step` : ""}`
    : "";
  const unused = round !== undefined && ring?.roundSeconds !== undefined ? round - ring.roundSeconds : 0;
  const burst =
    unused > 0
      ? `, ${(unused * 1000).toFixed(2)} ms of it the burst the link let through after idle, which the rounds' all-reduce used and this step's, smaller, cannot`
      : "";
  const rounds =
    round !== undefined
      ? `, ${(round * 1000).toFixed(2)} ms a step for its messages, the workers starting apart and a cold all-reduce (timed in rounds driven as steps${burst})`
      : "";
  return rounds + also + cpu;
}

/** "a", "a and b", "a, b and c". */
export function namesOf(names: readonly string[]): string {
  return names.length > 1 ? `${names.slice(0, -1).join(", ")} and ${names.at(-1)}` : (names[0] ?? "");
}

/** Work a replica does each step beside forward, backward and update, alone on one core: what it is, and whether it was timed. */
export interface ReplicaWork {
  what: string;
  ms: number;
  timed: boolean;
}

/** Every layer's forward and backward at batch b, added up. */
function wholeLayersMs(p: ModelProfile, b: number): number {
  const { forwardMs, backwardMs } = layersMs(p, 0, p.layers.length, b);
  return forwardMs + backwardMs;
}

/**
 * One replica's whole step (forward, backward, update) on `perReplica` samples: timed on a worker
 * where the profile has it, else from FLOPs and kernel counts; longer as the machine's workers
 * share its cores.
 */
export function replicaComputeMs(
  o: { flopsPerSample: number; layers: number; gradientBytes: number; replicas: number; profile?: ModelProfile },
  perReplica: number,
  s: Speeds,
): { computeMs: number; timed: boolean } {
  // NaN without a profile, or with one whose replica step was not timed at every batch.
  const stepMs = o.profile ? atBatch(o.profile.batches, o.profile.replicaStepMs, perReplica) : NaN;
  // A step too big to time on a capped worker: its layers' forward and backward, timed one by one.
  const timed = Number.isFinite(stepMs) || !o.profile?.layers.length ? stepMs : wholeLayersMs(o.profile, perReplica);
  // A timed step includes a GPU worker's readback and upload; an estimate adds them.
  const transfersMs = s.deviceBytesPerSecond ? ((2 * o.gradientBytes) / s.deviceBytesPerSecond) * 1000 : 0;
  const alone = Number.isFinite(timed)
    ? timed
    : ((3 * o.flopsPerSample * perReplica) / s.flopsPerSecond +
        o.layers * (KERNELS_FWD + KERNELS_BWD) * s.kernelSeconds) *
        1000 +
      transfersMs;
  return { computeMs: alone * (o.replicas > 1 ? fullSharing(s, o.profile) : 1), timed: Number.isFinite(timed) };
}

/**
 * How much longer each worker computes when all of the most crowded machine's workers compute at
 * once: as measured with the profile where it was, else workers per core. Never less than workers
 * per core: a measurement that says more workers than cores cost nothing caught them out of step.
 */
export function fullSharing(s: Speeds, profile: ModelProfile | undefined): number {
  return Math.max(s.coreSharing, profile?.sharing?.slowdown ?? 1);
}

export function basis(s: Speeds, profile: ModelProfile | undefined, dataRing = false): string {
  const timedParts =
    profile?.replicaStepMs.length === 0 ? "layers" : profile?.layers.length ? "layers and step" : "step";
  const untimedStep =
    profile?.replicaStepMs.length === 0
      ? ` (its whole step was ${profile.replicaStep.why ?? "not timed"}: the step is its layers' forward and backward passes added up)`
      : "";
  const compute = profile
    ? `the model's ${timedParts} timed on ${profile.timedOn} at batches ${profile.batches.join(" and ")}${untimedStep}`
    : `${(s.flopsPerSecond / 1e9).toFixed(1)} GFLOP/s matrix speed and ${(s.kernelSeconds * 1e6).toFixed(1)} us per TF.js kernel (the model's FLOPs; no profile was taken)`;
  const shared = profile?.sharing;
  const sharing = shared
    ? `, ${shared.workers} workers on one machine stepping at once each ${shared.slowdown.toFixed(2)}x as long as one alone`
    : s.coreSharing > 1
      ? `, ${s.coreSharing.toFixed(1)} workers per core`
      : "";
  const links = `${(s.linkBytesPerSecond / 1e6).toFixed(0)} MB/s links with ${(s.latencySeconds * 1e3).toFixed(2)} ms latency (measured when the workers joined)`;
  const ring = !dataRing
    ? ""
    : s.ring
      ? `, the all-reduce priced by the data ring itself (${s.ring.path}, measured on its ${s.ring.members} members: ${(s.ring.linkBytesPerSecond / 1e6).toFixed(0)} MB/s a hop, ${(s.ring.latencySeconds * 1e3).toFixed(2)} ms a phase${s.ring.chosen ? `; ${s.ring.path} because ${s.ring.chosen}` : ""})`
      : ", the all-reduce priced at those links' speed (the data ring was not measured)";
  return `${compute}, ${links}${ring}${sharing}`;
}
