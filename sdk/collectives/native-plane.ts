import { loadAddon, type NativeAddon } from "../backends/native/addon";
import {
  AuthError,
  CollectiveError,
  ProtocolError,
  TimeoutError,
  type ErrorDetails,
  type MeshtrainError,
} from "../errors/errors";

/** The addon's data-plane functions, or why this process has none. */
export function nativeDataPlane(): { ok: true; addon: NativeAddon } | { ok: false; reason: string } {
  const load = loadAddon();
  if (!load.ok) return { ok: false, reason: `the native addon is missing: ${load.reason}` };
  if (typeof load.addon.dataPlaneProblem !== "function")
    return { ok: false, reason: "the native addon was built before the data plane existed: run npm install again" };
  const problem = load.addon.dataPlaneProblem();
  return problem === null ? { ok: true, addon: load.addon } : { ok: false, reason: problem };
}

/** The typed error for a rejection of the addon's data-plane calls (its Error's code says the kind). */
export function dataPlaneError(err: unknown, details: ErrorDetails, hint?: string): MeshtrainError {
  const e = err as { code?: string; message?: string };
  const summary = `native data plane: ${e.message ?? String(err)}`;
  const o = { details, ...(hint ? { hint } : {}) };
  switch (e.code) {
    case "timeout":
      return new TimeoutError(summary, {
        ...o,
        hint: hint ?? "a worker is stuck or much slower than the others; see the driver's error for which",
      });
    case "auth":
      return new AuthError(summary, { ...o, hint: "every worker must be started with the cluster's token" });
    case "protocol":
      return new ProtocolError(summary, o);
    default:
      return new CollectiveError(summary, {
        ...o,
        hint: hint ?? "that worker exited or lost its network; the driver's error names the cause",
      });
  }
}
