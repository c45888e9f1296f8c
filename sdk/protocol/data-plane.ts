/**
 * Where a ring's tensor bytes travel. "native": plain TCP sockets driven by the native addon on
 * threads of its own, reducing in place (native/src/dp_*.c). "websocket": the authenticated
 * WebSocket links of the control plane, reduced in JavaScript (also the path under TLS).
 */
export type DataPlanePath = "native" | "websocket";

/** Where a cluster's all-reduces travel, and why there: a run's notes say both. */
export interface DataPlaneChoice {
  readonly path: DataPlanePath;
  readonly why: string;
}
