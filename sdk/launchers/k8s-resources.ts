import { memoryTotal, type MemoryEstimate } from "../plan/memory";
import type { OptionProblem } from "./option-problems";

/**
 * What a meshtrain process holds besides its model: Node, TF.js, the native kernels' threads and
 * its data (a worker's shard, the driver's dataset). Measured here: an idle worker is 112 MiB
 * resident; a worker training the demo CNN (15 MiB of model state by the estimate) peaked at
 * 252 MiB, the demo's driver with MNIST at 212 MiB.
 */
export const RUNTIME_BYTES = 320 * 2 ** 20;

/** The estimate leaves out TF.js's temporaries during a step; twice the estimate covers them. */
const ESTIMATE_HEADROOM = 2;

const MIB = 2 ** 20;

/** A pod's memory request and limit, in Kubernetes quantities, and how they were reached. */
export interface PodMemory {
  request: string;
  limit: string;
  /** One line for the manifest's annotation and the CLI's summary. */
  reason: string;
}

function mib(bytes: number): string {
  return `${(bytes / MIB).toFixed(1)} MiB`;
}

/** MiB in whole 64 MiB steps, so requests read as round numbers. */
function quantity(bytes: number): number {
  return Math.ceil(bytes / (64 * MIB)) * 64;
}

/**
 * The memory a pod asks for, from the plan's per-replica estimate: the runtime's own
 * footprint plus twice the model's share; the limit doubles the request, so a step that needs
 * more than estimated slows the node down before the pod is killed. A `given` request (--memory)
 * replaces the estimate.
 */
export function podMemory(
  estimate: MemoryEstimate,
  given: string | undefined,
  whose: "per worker" | "for the driver",
): PodMemory {
  const model = memoryTotal(estimate);
  if (given !== undefined)
    return {
      request: given,
      limit: given,
      reason: `memory ${given}, as given (--memory); the plan estimated ${mib(model)} of model state ${whose}`,
    };
  const request = quantity(RUNTIME_BYTES + ESTIMATE_HEADROOM * model);
  const parts = `params ${mib(estimate.paramsBytes)}, gradients ${mib(estimate.gradientBytes)}, optimizer ${estimate.optimizerBytes === null ? "unknown" : mib(estimate.optimizerBytes)}, activations ${estimate.activationBytes === null ? "unknown" : mib(estimate.activationBytes)}, the runtime's growth in a fit ${mib(estimate.runtimeGrowthBytes)}`;
  return {
    request: `${request}Mi`,
    limit: `${2 * request}Mi`,
    reason: `request = ${mib(RUNTIME_BYTES)} runtime + ${ESTIMATE_HEADROOM} x ${mib(model)} estimated ${whose} (${parts}), rounded up to 64 MiB; limit = 2 x request`,
  };
}

/** A Kubernetes quantity from the command line, checked here (the API server would reject it only at apply): the problem, or null. */
export function quantityProblem(flag: string, value: string, kind: "memory" | "cpu"): OptionProblem | null {
  const ok =
    kind === "memory"
      ? /^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$/.test(value)
      : /^([0-9]+(\.[0-9]+)?|[0-9]+m)$/.test(value);
  if (ok && Number.parseFloat(value) > 0) return null;
  return {
    summary: `${flag} ${JSON.stringify(value)} is not a Kubernetes ${kind} quantity`,
    hint: kind === "memory" ? "e.g. 2Gi or 512Mi" : "cores, e.g. 2, 0.5 or 500m",
  };
}
