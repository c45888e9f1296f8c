import type { ClusterSpec } from "../config/cluster-spec";
import type { WorkerHandle } from "../members/worker-handle";
import { hostRing } from "../plan/host-ring";
import type { RingSpeed } from "../plan/predict";
import { dataWiring, type Wiring } from "../plan/wiring";
import type { DataPlaneChoice, DataPlanePath } from "../protocol/data-plane";
import { strategyOfSpec } from "../strategies/strategy-table";
import { probeRing, type MeasuredRings } from "../driver/ring-probe";
import { timeRingPlanes } from "../driver/ring-planes";

/** What measuring a cluster's data ring uses of it. */
export interface RingHost {
  spec: ClusterSpec;
  handles: readonly WorkerHandle[];
  rings: MeasuredRings;
  guard<T>(p: Promise<T>): Promise<T>;
  connect(wiring: Wiring, o?: { plane?: DataPlaneChoice }): Promise<void>;
  /** The wiring's key once connected, and the plane its all-reduces take. */
  wired(): string;
  plane(): DataPlaneChoice;
}

/**
 * Strategy "data": the ring wired as its fits use it, its all-reduce timed on both planes where
 * the choice is ours, and left on the faster (once per wiring).
 */
export function measureDataRing(c: RingHost): Promise<RingSpeed | undefined> {
  return c.rings.measure(strategyOfSpec(c.spec).probesRing(c.spec), async () => {
    const wiring = dataWiring(hostRing(c.handles.map((h) => h.info?.hostname)).order);
    await c.connect(wiring);
    const key = c.wired();
    const probe = (path: DataPlanePath): Promise<RingSpeed> =>
      c.guard(probeRing(c.handles, path, c.spec.timeouts.stepMs));
    const rewire = (plane: DataPlaneChoice): Promise<void> => c.connect(wiring, { plane });
    return {
      key,
      time: async () =>
        (await timeRingPlanes({ current: c.plane(), asked: c.spec.dataPlane ?? "auto", probe, rewire })).ring,
    };
  });
}
