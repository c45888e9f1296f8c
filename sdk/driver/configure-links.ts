import type { ClusterSpec } from "../config/cluster-spec";
import type { Wiring } from "../plan/wiring";
import { chooseDataPlane } from "./data-plane-choice";
import type { WorkerHandle } from "../members/worker-handle";
import type { DataPlaneChoice } from "../protocol/data-plane";

/**
 * Sends every member its links (all-reduce group, pipeline neighbours, parameter servers) and
 * waits until all are up. `generation` marks an elastic membership. Returns where the
 * all-reduces travel (undefined when no group has two members): `timed`, the plane the ring's
 * timing chose (driver/ring-planes.ts), or else the rule's.
 */
export async function configureLinks(
  spec: ClusterSpec,
  workers: readonly WorkerHandle[],
  servers: readonly WorkerHandle[],
  wiring: Wiring,
  members: readonly WorkerHandle[],
  generation: number | undefined,
  timed?: DataPlaneChoice,
): Promise<DataPlaneChoice | undefined> {
  const addresses = workers.map((h) => h.address);
  const rings = wiring.groups.filter((g) => g.length > 1 && g.some((r) => members.some((h) => h.rank === r)));
  const inRings = members.filter((h) => rings.some((g) => g.includes(h.rank)));
  const plane = rings.length > 0 ? (timed ?? chooseDataPlane(spec, inRings)) : undefined;
  const timeoutMs = spec.timeouts.connectMs;
  await Promise.all(
    members.map((h) =>
      h.channel.request(
        {
          type: "configure",
          rank: h.rank,
          worldSize: workers.length,
          ring: wiring.groups.find((g) => g.includes(h.rank)) ?? [h.rank],
          pipe: wiring.pipe[h.rank] ?? { prev: null, next: null },
          addresses,
          ...(wiring.servers ? { servers: servers.map((s) => s.address) } : {}),
          ...(spec.tls ? { ca: spec.tls.ca } : {}),
          ...(generation !== undefined ? { generation } : {}),
          chunkElements: spec.chunkElements,
          ...(plane ? { dataPlane: plane.path } : {}),
          connectTimeoutMs: timeoutMs,
          stepTimeoutMs: spec.timeouts.stepMs,
        },
        "configured",
        { timeoutMs: timeoutMs + 1000, waitingFor: "its links to the other workers" },
      ),
    ),
  );
  return plane;
}
