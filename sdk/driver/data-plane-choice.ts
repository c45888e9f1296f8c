import type { ClusterSpec } from "../config/cluster-spec";
import { ConfigError } from "../errors/errors";
import type { WorkerHandle } from "../members/worker-handle";
import type { DataPlaneChoice } from "../protocol/data-plane";

/**
 * The native data plane when every ring member has it, TLS is off and the user did not ask for
 * WebSockets; otherwise the WebSocket path, with the reason. Asking for "native" where it cannot
 * run is a ConfigError naming the worker, never a silent fallback.
 */
export function chooseDataPlane(
  spec: ClusterSpec,
  members: ReadonlyArray<Pick<WorkerHandle, "rank" | "address" | "info">>,
): DataPlaneChoice {
  const asked = spec.dataPlane ?? "auto";
  if (asked === "websocket") return { path: "websocket", why: 'asked for with .dataPlane("websocket")' };
  // TLS with "native" was refused when the spec was built (config/cluster-spec.ts).
  if (spec.tls) return { path: "websocket", why: "TLS is on: tensors stay on the encrypted WebSocket links" };
  const lacking = members.filter((h) => h.info?.dataPlane?.native !== true);
  if (lacking.length > 0) {
    const said = lacking
      .map(
        (h) =>
          `rank ${h.rank} (${h.address}): ${h.info?.dataPlane?.why ?? "a meshtrain without the native data plane"}`,
      )
      .join("; ");
    if (asked === "native") {
      throw new ConfigError(`.dataPlane("native") was asked for, but not every worker can run it: ${said}`, {
        hint: 'run npm install where the addon is missing (it needs a C compiler and OpenBLAS), or use .dataPlane("auto")',
      });
    }
    return { path: "websocket", why: `not every worker has the native data plane: ${said}` };
  }
  return { path: "native", why: "every worker has the native addon and TLS is off" };
}

/** The sentence a run's notes give it. */
export function dataPlaneLine(c: DataPlaneChoice): string {
  return c.path === "native"
    ? `all-reduce over the native data plane (TCP, reduced in C off the JavaScript thread): ${c.why}`
    : `all-reduce over the WebSocket links (reduced in JavaScript): ${c.why}`;
}
