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
 * sync: the workers step together: compute, then all of them pull (each server sending N shares
 * one after another, or a worker's own link taking the whole model, whichever is slower), then
 * all of them push likewise, each a round trip.
 *
 * async: each worker cycles alone (its pull, compute, its push, at its own link's speed); a
 * server's link carries pulls out while pushes come in, so it passes at most bandwidth / share
 * worker steps a second, and the slower of the two bounds decides.
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
  const why = `${basis(s, timed ? o.profile : undefined)}; the servers' links ${links}`;
  if (o.mode === "sync") {
    const fanned = (bytes: number): number => Math.max(own(bytes), ...servers.map((v) => ((n * v.share * bytes) / v.linkBytesPerSecond) * 1000));
    const commMs = fanned(o.pullBytes) + fanned(o.pushBytes) + 4 * latencyMs;
    const stepMs = computeMs + commMs + stepOverheadMs(s, o.feedBytes);
    return { stepMs, computeMs, commMs, bubble: 0, samplesPerSecond: (o.globalBatch / stepMs) * 1000, basis: why, timed };
  }
  const cycleMs = computeMs + own(o.pullBytes) + own(o.pushBytes) + 4 * latencyMs + stepOverheadMs(s, o.feedBytes / n);
  const most = Math.max(o.pullBytes, o.pushBytes);
  const serverSteps = Math.min(...servers.map((v) => v.linkBytesPerSecond / Math.max(1e-9, v.share * most)));
  const stepsPerSecond = Math.min(n / (cycleMs / 1000), serverSteps);
  const stepMs = (n / stepsPerSecond) * 1000;
  return { stepMs, computeMs, commMs: stepMs - computeMs, bubble: 0, samplesPerSecond: stepsPerSecond * perReplica, basis: `${why}; each worker steps alone, ${serverSteps < n / (cycleMs / 1000) ? "the servers' links the bound" : "its own cycle the bound"}`, timed };
}
