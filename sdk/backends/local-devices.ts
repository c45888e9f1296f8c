import type { ClusterSpec } from "../config/cluster-spec";
import { DEVICE_ENV, type DeviceAssignment } from "../config/device";
import { ConfigError } from "../errors/errors";
import { discoverAdapters, type LocalAdapter } from "./webgpu/discover";
import { icdManifests, vulkanEnv } from "./webgpu/vulkan";
import { probeGpus } from "./cuda-gpus";

/** One local worker's device: what it is told it computes on, the environment that gives it that device, and its name. */
export interface LocalDevice {
  assignment: DeviceAssignment;
  env: NodeJS.ProcessEnv;
  label: string;
}

/** The CPU, as .workers(n) gives it: no GPU is looked for. */
export function cpuDevice(): LocalDevice {
  return {
    assignment: { kind: "cpu" },
    env: { [DEVICE_ENV]: JSON.stringify({ kind: "cpu" }), CUDA_VISIBLE_DEVICES: "-1" },
    label: "cpu",
  };
}

function adapterDevice(a: LocalAdapter): LocalDevice {
  const assignment: DeviceAssignment = { kind: "webgpu", adapter: a.name, software: a.software };
  const manifest = a.icd ? (icdManifests({ VK_ICD_FILENAMES: a.icd })[0] ?? null) : null;
  return {
    assignment,
    env: { ...vulkanEnv(manifest), [DEVICE_ENV]: JSON.stringify(assignment), CUDA_VISIBLE_DEVICES: "-1" },
    label: `webgpu ${a.software ? "software" : "hardware"}: ${a.name}${a.icd ? ` (${a.icd})` : ""}`,
  };
}

/** A local worker given CUDA GPU `index` (tfjs-node-gpu sees only it). */
function cudaDevice(index: string): LocalDevice {
  return {
    assignment: { kind: "cuda", index },
    env: { [DEVICE_ENV]: JSON.stringify({ kind: "cuda", index }), CUDA_VISIBLE_DEVICES: index },
    label: `cuda:${index}`,
  };
}

/**
 * The devices of `count` local workers under .gpus(count, options): CUDA GPUs where
 * tfjs-node-gpu can drive them, else WebGPU hardware adapters, one per worker; software adapters
 * too with `software: true` (a software adapter is the CPU: when fewer than the workers, each
 * worker runs its own instance of one). Too few devices is a ConfigError naming those found and
 * why others were not, unless `fallback: "cpu"`, which starts CPU workers and says so.
 */
export async function gpuDevices(
  spec: ClusterSpec,
  count: number,
): Promise<{ devices: LocalDevice[]; notes: string[] }> {
  const w = spec.workers;
  const software = w.kind === "local" && w.software === true;
  const cuda = probeGpus();
  if (!cuda.problem) {
    const devices = cuda.indices.slice(0, count).map(cudaDevice);
    if (devices.length >= count) return { devices, notes: [] };
  }
  const survey = await discoverAdapters();
  const usable = survey.adapters.filter((a) => a.ordinal === 0);
  const unreachable = survey.adapters.filter((a) => a.ordinal > 0);
  const hardware = usable.filter((a) => !a.software);
  const soft = software ? usable.filter((a) => a.software) : [];
  const chosen = [...hardware, ...soft];
  const notes: string[] = [];
  if (unreachable.length > 0)
    notes.push(
      `${unreachable.length} adapter(s) share a name with another of their driver (${[...new Set(unreachable.map((a) => a.name))].join(", ")}): Dawn's Node bindings pick adapters by name, so only the first of each is used`,
    );
  if (chosen.length >= count || (soft.length > 0 && chosen.length > 0)) {
    const devices = Array.from({ length: count }, (_, i) => adapterDevice(chosen[i] ?? soft[i % soft.length]!));
    if (chosen.length < count)
      notes.push(
        `gpus(${count}, { software: true }): ${chosen.length} adapter(s) found; the software adapter "${soft[0]!.name}" serves the others (each worker runs its own copy of it on the CPU)`,
      );
    return { devices, notes };
  }
  const found = [
    ...(cuda.problem ? [] : cuda.indices.map((i) => `cuda:${i}`)),
    ...chosen.map((a) => `webgpu ${a.software ? "software" : "hardware"} "${a.name}"`),
  ];
  const untaken = software
    ? []
    : usable.filter((a) => a.software).map((a) => `software adapter "${a.name}", taken only with { software: true }`);
  const why = [
    cuda.problem ? `CUDA: ${cuda.problem}` : null,
    ...survey.problems.map((p) => `WebGPU: ${p}`),
    ...untaken,
  ].filter((p): p is string => p !== null);
  const summary = `gpus(${count}) asks for ${count} GPU(s); this machine has ${found.length === 0 ? "none meshtrain can use" : `${found.length}: ${found.join(", ")}`}${why.length ? ` (${why.join("; ")})` : ""}`;
  if (w.kind === "local" && w.fallback === "cpu") {
    return {
      devices: Array.from({ length: count }, cpuDevice),
      notes: [`${summary}; starting ${count} CPU worker(s) instead, as fallback: "cpu" asks`],
    };
  }
  throw new ConfigError(summary, {
    hint:
      found.some((f) => f.includes("software")) || survey.adapters.some((a) => a.software)
        ? `ask for fewer, pass { software: true } to use a software adapter (a CPU rasteriser, for tests), or { fallback: "cpu" } to start CPU workers`
        : `ask for fewer, install a GPU's driver (Vulkan on Linux), pass { software: true } to accept a software adapter, or { fallback: "cpu" } to start CPU workers`,
  });
}
