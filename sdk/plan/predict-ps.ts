import type { ModelProfile } from "./profile";
import { busiestCore, handlingMs, type CoreLoad, type Seat } from "./core-load";
import { basis, namesOf, replicaComputeMs, stepOverheadMs, type Prediction, type Speeds } from "./predict";

/** The members' seats: the workers', the servers', and the driver's where it measured itself. */
export interface Seats {
  workers: readonly Seat[];
  servers: readonly Seat[];
  driver?: Seat;
}

/** A parameter server's link from the driver, as measured when it joined. */
export interface ServerLink {
  /** Its share of the pulled and pushed bytes (the variables it holds). */
  share: number;
  linkBytesPerSecond: number;
  latencySeconds: number;
}

/**
 * Parameter servers: every worker step pulls each server's share of the parameters and pushes it
 * that share of the gradient, over WebSocket links, so each server's link carries every worker's
 * share both ways.
 *
 * sync: the workers compute together, then pull and push. A server sends its answers to pulls
 * one at a time (PullQueue), so the first worker pushes while the last still pulls: the step's
 * communication is the slower of (all N pulls, then one push) and (one pull, then all N
 * pushes), each a round trip. Measured
 * between namespace hosts at 100 Mbit/s (bench:network, 2026-11-27, links that banked 5 ms), the
 * small MLP's step on 2 workers took 260 ms: 2 pulls of 86 ms, then the second worker's push.
 *
 * async: each worker cycles alone (its pull, compute, its push), so a server's link passes at
 * most bandwidth / share worker steps a second each way, and the slower of that and a worker's
 * own cycle decides. Nothing keeps the cycles apart: a pull can find another worker's pull on
 * the server's link (a push another's push). Cycling on its own every C ms, each of the other
 * n - 1 workers is mid-transfer with chance t / C, with half of it left on average, so a cycle
 * waits (n - 1) (t / C) (t / 2) more each way, t the server link's time for one transfer; C is
 * solved for. Measured between namespace hosts at 1 Gbit/s (bench:network, 2026-11-27), the
 * small MLP's async cycle took 29.5 ms where the cycle without waits priced 22.2 (1.33x); with
 * the waits, about 25.
 *
 * CPU: a server that shares a core with a worker (pinned beside it, or more processes than a
 * machine's cores) shares that core's time, which links measured one process at a time do not
 * show. No step is shorter than its busiest core's CPU time: each worker's compute and messages,
 * each server's share of every worker's pull and push and the driver's feed, at what the link
 * probes cost each process (core-load.ts). Measured between namespace hosts at 10 Gbit/s (bench:network,
 * 2026-11-27; 2 workers pinned to the machine's 2 cores, the server beside worker 0), the links
 * alone priced five of the six server rows 1.30-1.62x too fast; with the busiest core all six
 * were within 0.98-1.14x, and the core was the bound on every one.
 */
export function predictPs(o: PsInputs, s: Speeds, servers: readonly ServerLink[], seats?: Seats): Prediction {
  const n = o.replicas;
  const { computeMs, timed } = replicaComputeMs({ ...o, gradientBytes: o.pushBytes }, o.globalBatch / n, s);
  const own = (bytes: number): number => (bytes / s.linkBytesPerSecond) * 1000;
  const links = servers.map((v) => `${(v.linkBytesPerSecond / 1e6).toFixed(0)} MB/s`).join(", ");
  // A step's compute is priced as the workers run it together; k workers to a core each spend 1/k of that wall time on it.
  const core = seats ? coreLoad(o, computeMs / s.coreSharing, servers, seats) : undefined;
  const cpu = core
    ? ", and each member's CPU for its messages at what the link probes cost it (a server's update not counted)"
    : " (the work of moving the shards through each process, its frames and copies, not counted: a member did not say what its messages cost it)";
  const step: PsStep = {
    computeMs,
    timed,
    core,
    latencyMs: Math.max(s.latencySeconds, ...servers.map((v) => v.latencySeconds)) * 1000,
    why: `${basis(s, timed ? o.profile : undefined)}; the servers' links ${links}${cpu}`,
    // `k` workers' transfers of `bytes` each, through every server's link and each worker's own.
    through: (bytes, k) =>
      Math.max(own(bytes), ...servers.map((v) => ((k * v.share * bytes) / v.linkBytesPerSecond) * 1000)),
    bound: (ms) =>
      core && core.ms >= ms
        ? `; the busiest core bounds it: ${namesOf(core.names)} on it spend ${core.ms.toFixed(1)} ms of CPU a step`
        : "",
  };
  return o.mode === "sync" ? syncStep(o, s, step) : asyncStep(o, s, servers, step);
}

interface PsInputs {
  mode: "sync" | "async";
  flopsPerSample: number;
  layers: number;
  pullBytes: number;
  pushBytes: number;
  globalBatch: number;
  replicas: number;
  feedBytes: number;
  profile?: ModelProfile;
}

/** What both modes' predictions start from. */
interface PsStep {
  computeMs: number;
  timed: boolean;
  core: CoreLoad | undefined;
  latencyMs: number;
  why: string;
  through(bytes: number, k: number): number;
  bound(ms: number): string;
}

/** Sync servers: every worker's pull, then every push, summed once per step. */
function syncStep(o: PsInputs, s: Speeds, p: PsStep): Prediction {
  const n = o.replicas;
  const commMs =
    Math.max(
      p.through(o.pullBytes, n) + p.through(o.pushBytes, 1),
      p.through(o.pullBytes, 1) + p.through(o.pushBytes, n),
    ) +
    4 * p.latencyMs;
  const linksMs = p.computeMs + commMs + stepOverheadMs(s, o.feedBytes);
  const stepMs = Math.max(linksMs, p.core?.ms ?? 0);
  return {
    stepMs,
    computeMs: p.computeMs,
    commMs: commMs + stepMs - linksMs,
    bubble: 0,
    samplesPerSecond: (o.globalBatch / stepMs) * 1000,
    basis: p.why + p.bound(linksMs),
    timed: p.timed,
  };
}

/** Async servers: each worker cycles alone, waiting behind the others' transfers. */
function asyncStep(o: PsInputs, s: Speeds, servers: readonly ServerLink[], p: PsStep): Prediction {
  const n = o.replicas;
  const alone =
    p.computeMs +
    p.through(o.pullBytes, 1) +
    p.through(o.pushBytes, 1) +
    4 * p.latencyMs +
    stepOverheadMs(s, o.feedBytes / n);
  // The waits behind the others' transfers: C = alone + k / C, k = (n - 1) (t_pull^2 + t_push^2) / 2.
  const serverMs = (bytes: number): number =>
    Math.max(...servers.map((v) => ((v.share * bytes) / v.linkBytesPerSecond) * 1000));
  const k = ((n - 1) * (serverMs(o.pullBytes) ** 2 + serverMs(o.pushBytes) ** 2)) / 2;
  const cycleMs = (alone + Math.sqrt(alone * alone + 4 * k)) / 2;
  const most = Math.max(o.pullBytes, o.pushBytes);
  const serverSteps = Math.min(...servers.map((v) => v.linkBytesPerSecond / Math.max(1e-9, v.share * most)));
  const linksPerSecond = Math.min(n / (cycleMs / 1000), serverSteps);
  // A round of the busiest core's work is one step of every worker.
  const stepsPerSecond = Math.min(linksPerSecond, p.core ? n / (p.core.ms / 1000) : Infinity);
  const stepMs = (n / stepsPerSecond) * 1000;
  const limit = serverSteps < n / (cycleMs / 1000) ? "the servers' links the bound" : "its own cycle the bound";
  const eachAlone = `each worker steps alone, ${limit} (${(cycleMs - alone).toFixed(1)} ms of it behind the others' transfers)`;
  return {
    stepMs,
    computeMs: p.computeMs,
    commMs: stepMs - p.computeMs,
    bubble: 0,
    samplesPerSecond: stepsPerSecond * (o.globalBatch / n),
    basis: `${p.why}; ${eachAlone}${p.bound((n / linksPerSecond) * 1000)}`,
    timed: p.timed,
  };
}

/**
 * The CPU time of one step of every worker on the busiest core: each worker's compute and its
 * messages (the feed, a pull and a push with each server), each server's share of every
 * worker's pull and push, and the driver's feed. Sending is priced as receiving (the members
 * measured receiving; the driver, sending). Undefined where a member did not say what its
 * messages cost it: nothing is priced from a guess.
 */
function coreLoad(
  o: { pullBytes: number; pushBytes: number; feedBytes: number; replicas: number },
  computeMs: number,
  servers: readonly ServerLink[],
  seats: Seats,
): CoreLoad | undefined {
  const all = [...seats.workers, ...seats.servers, ...(seats.driver ? [seats.driver] : [])];
  if (all.length === 0 || all.some((x) => !x.handling)) return undefined;
  const cost = (x: Seat, messages: number, bytes: number): number => handlingMs(x.handling!, messages, bytes);
  const n = o.replicas;
  const workers = seats.workers.map((w, r) => ({
    ...w,
    name: `worker ${r}`,
    busyMs: computeMs + cost(w, 1 + 2 * servers.length, o.feedBytes / n + o.pullBytes + o.pushBytes),
  }));
  const onServers = seats.servers.map((v, j) => ({
    ...v,
    name: `server ${j}`,
    busyMs: cost(v, 2 * n, n * (servers[j]?.share ?? 0) * (o.pullBytes + o.pushBytes)),
  }));
  // The driver sends each worker its batch and takes its answer; one that did not measure itself is left out.
  const driver = seats.driver
    ? [{ ...seats.driver, name: "the driver", busyMs: cost(seats.driver, n, o.feedBytes) }]
    : [];
  return busiestCore([...workers, ...onServers, ...driver]);
}
