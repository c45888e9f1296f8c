import { allReduceMs, stepRoundSeconds, type RingSpeed } from "../plan/predict";
import type { DataPlaneChoice } from "../protocol/data-plane";

/** The all-reduces the two planes are compared by: a small model's gradient driven as a step, and a large one's. */
const COMPARED_BYTES = [1 << 20, 16 << 20] as const;
/**
 * How much faster the WebSocket links must be at both sizes to carry the all-reduce instead of the
 * native plane, which reduces off the JavaScript threads and so leaves their CPU to the step. A
 * margin, so that noise between two close timings does not move a cluster from one plane to the
 * other between launches.
 */
const MARGIN = 1.2;

/** What a step pays for an all-reduce of `bytes` on `ring`: the bytes on the ring, and around them what its step-shaped rounds took. */
function stepCostMs(ring: RingSpeed, bytes: number): number {
  return allReduceMs(bytes, ring.members, ring) + (stepRoundSeconds(ring, bytes) ?? 0) * 1000;
}

/**
 * Which plane carries the all-reduce, from both timed on the same ring: the native plane unless
 * the WebSocket links were faster by MARGIN at both sizes. The native plane came out 5x slower
 * than the WebSocket links at 1 MiB on an AVX-512 VM (issue 65) while a rule still chose it
 * because it had been the faster on another machine; timing both is what tells. The ring returned
 * is the one chosen, carrying why (`chosen`) for the plan's explain() and the run's notes.
 */
export function fasterPlane(native: RingSpeed, websocket: RingSpeed): { choice: DataPlaneChoice; ring: RingSpeed } {
  const costs = COMPARED_BYTES.map((b) => [stepCostMs(native, b), stepCostMs(websocket, b)] as const);
  const socketsWin = costs.every(([n, w]) => w * MARGIN <= n);
  const told = costs
    .map(([n, w], i) => `${COMPARED_BYTES[i]! >> 20} MiB ${n.toFixed(2)} ms native, ${w.toFixed(2)} ms over WebSockets`)
    .join("; ");
  const why = socketsWin
    ? `both planes timed on this ring, the WebSocket links ${MARGIN}x faster or more at every size (${told})`
    : `both planes timed on this ring (${told}); the native plane is kept unless the WebSocket links are ${MARGIN}x faster at every size`;
  const ring = socketsWin ? websocket : native;
  return { choice: { path: ring.path, why }, ring: Object.freeze({ ...ring, chosen: why }) };
}

/** The plane timing chose for a ring measured on both (its `chosen`), to wire it on again; undefined where the rule chose. */
export function timedPlane(ring: RingSpeed | undefined): DataPlaneChoice | undefined {
  return ring?.chosen ? { path: ring.path, why: ring.chosen } : undefined;
}

/**
 * Times the ring on the plane it is wired on and, where the plane was the rule's choice of the
 * native one (dataPlane "auto"), on the WebSocket links too, then leaves the ring wired on the
 * faster. `probe` times the ring as wired; `rewire` wires it again on the plane given.
 */
export async function timeRingPlanes(o: {
  current: DataPlaneChoice;
  asked: "auto" | "native" | "websocket";
  probe(path: DataPlaneChoice["path"]): Promise<RingSpeed>;
  rewire(plane: DataPlaneChoice): Promise<void>;
}): Promise<{ choice: DataPlaneChoice; ring: RingSpeed }> {
  const first = await o.probe(o.current.path);
  if (o.asked !== "auto" || o.current.path !== "native") return { choice: o.current, ring: first };
  await o.rewire({ path: "websocket", why: "timed beside the native data plane" });
  const sockets = await o.probe("websocket");
  const faster = fasterPlane(first, sockets);
  await o.rewire(faster.choice);
  return faster;
}
