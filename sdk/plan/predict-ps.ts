import type { ModelProfile } from "./profile";
import { basis, replicaComputeMs, stepOverheadMs, type Prediction, type Speeds } from "./predict";

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
 */
export function predictPs(
  o: { mode: "sync" | "async"; flopsPerSample: number; layers: number; pullBytes: number; pushBytes: number; globalBatch: number; replicas: number; feedBytes: number; profile?: ModelProfile },
  s: Speeds,
  servers: readonly ServerLink[],
): Prediction {
  const n = o.replicas;
  const perReplica = o.globalBatch / n;
  const { computeMs, timed } = replicaComputeMs({ ...o, gradientBytes: o.pushBytes }, perReplica, s);
  const own = (bytes: number): number => (bytes / s.linkBytesPerSecond) * 1000;
  const latencyMs = Math.max(s.latencySeconds, ...servers.map((v) => v.latencySeconds)) * 1000;
  const links = servers.map((v) => `${(v.linkBytesPerSecond / 1e6).toFixed(0)} MB/s`).join(", ");
  // Said, not priced: on fast links the processes' CPU, not the links, sets the pace (1.3-1.6x too fast at
  // 10 Gbit/s between namespace hosts, where a server shares a core with a worker; with a core of its own,
  // within ±25%: docs/performance.md, "Between machines").
  const why = `${basis(s, timed ? o.profile : undefined)}; the servers' links ${links} (the work of moving the shards through each process, its frames and copies, not counted)`;
  // `k` workers' transfers of `bytes` each, through every server's link and each worker's own.
  const through = (bytes: number, k: number): number => Math.max(own(bytes), ...servers.map((v) => ((k * v.share * bytes) / v.linkBytesPerSecond) * 1000));
  if (o.mode === "sync") {
    const commMs = Math.max(through(o.pullBytes, n) + through(o.pushBytes, 1), through(o.pullBytes, 1) + through(o.pushBytes, n)) + 4 * latencyMs;
    const stepMs = computeMs + commMs + stepOverheadMs(s, o.feedBytes);
    return { stepMs, computeMs, commMs, bubble: 0, samplesPerSecond: (o.globalBatch / stepMs) * 1000, basis: why, timed };
  }
  const alone = computeMs + through(o.pullBytes, 1) + through(o.pushBytes, 1) + 4 * latencyMs + stepOverheadMs(s, o.feedBytes / n);
  // The waits behind the others' transfers: C = alone + k / C, k = (n - 1) (t_pull^2 + t_push^2) / 2.
  const serverMs = (bytes: number): number => Math.max(...servers.map((v) => ((v.share * bytes) / v.linkBytesPerSecond) * 1000));
  const k = ((n - 1) * (serverMs(o.pullBytes) ** 2 + serverMs(o.pushBytes) ** 2)) / 2;
  const cycleMs = (alone + Math.sqrt(alone * alone + 4 * k)) / 2;
  const most = Math.max(o.pullBytes, o.pushBytes);
  const serverSteps = Math.min(...servers.map((v) => v.linkBytesPerSecond / Math.max(1e-9, v.share * most)));
  const stepsPerSecond = Math.min(n / (cycleMs / 1000), serverSteps);
  const stepMs = (n / stepsPerSecond) * 1000;
  return { stepMs, computeMs, commMs: stepMs - computeMs, bubble: 0, samplesPerSecond: stepsPerSecond * perReplica, basis: `${why}; each worker steps alone, ${serverSteps < n / (cycleMs / 1000) ? "the servers' links the bound" : "its own cycle the bound"} (${(cycleMs - alone).toFixed(1)} ms of it behind the others' transfers)`, timed };
}
