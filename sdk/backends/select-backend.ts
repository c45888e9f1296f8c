import * as os from "node:os";
import { registerGradients } from "./gradients";
import { BackendError } from "../errors/errors";
import type { BackendChoice, BackendName } from "../protocol/backend-names";
import { deviceFromEnv, type DeviceAssignment } from "../config/device";
import type { GpuFacts } from "../protocol/messages";
import { tryBackend } from "./try-backend";
import { hardwareVulkanDriver } from "./webgpu/vulkan";
import { blasCoreNote } from "./native/blas-core";

/** The TF.js backend a process runs on, its device and memory, and why better ones were not used. */
export interface BackendReport {
  backend: string;
  /** What it computes on, e.g. "cpu", "cuda:0", "webgpu: NVIDIA GeForce RTX 4090" (software adapters say so). */
  device: string;
  memoryBytes: number;
  notes: string[];
  /** The GPU, for GPU backends. */
  gpu?: GpuFacts;
}

function gpuDevice(): string {
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  return visible && visible !== "-1" ? `cuda:${visible.split(",")[0]}` : "cuda";
}

/** The device a backend computes on, in words. */
function deviceOf(name: BackendName, gpu: GpuFacts | undefined): string {
  if (name === "node-gpu") return gpuDevice();
  if (gpu) return `webgpu: ${gpu.name}${gpu.software ? ` (software GPU: ${gpu.description}, a CPU rasteriser)` : ""}`;
  return "cpu";
}

/**
 * The order "auto" tries: node-gpu where a CUDA GPU was given, webgpu where a GPU adapter was
 * given or (a worker given no device) where a hardware Vulkan driver is installed, then the CPU
 * backends. A worker given the CPU (.workers(n)) never looks for a GPU.
 */
function autoOrder(device: DeviceAssignment | null): BackendName[] {
  const cpu: BackendName[] = ["node", "native", "wasm", "cpu"];
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  const cuda =
    device?.kind === "cuda" || (device === null && visible !== undefined && visible !== "" && visible !== "-1");
  const webgpu = device?.kind === "webgpu" || (device === null && hardwareVulkanDriver());
  return [...(cuda ? (["node-gpu"] as const) : []), ...(webgpu ? (["webgpu"] as const) : []), ...cpu];
}

/** What the user is told about the backend in use, naming why better ones were not used. */
function describe(name: BackendName, skipped: string[]): string | null {
  const why = skipped.length > 0 ? ` (${skipped.join("; ")})` : "";
  switch (name) {
    case "native":
      return skipped.length > 0
        ? `workers use "native": meshtrain's OpenBLAS kernels on TF.js's cpu backend${why}`
        : null;
    case "wasm":
      return `workers use "wasm" with meshtrain's kernels for what it lacks: slower than "native"${why}`;
    case "cpu":
      return `workers use the stock TF.js "cpu" backend, whose JavaScript kernels are 100-1500x slower than "native"${why}`;
    case "webgpu":
      return skipped.length > 0 ? `workers use "webgpu"${why}` : null;
    default:
      return skipped.length > 0 ? `workers use "${name}"${why}` : null;
  }
}

/**
 * Makes `choice` the TF.js backend of this process. "auto" takes the best one present (see
 * autoOrder), a software GPU never, and says in `notes` why a faster one was not used. `threads`
 * is this worker's share of the machine's cores; `device` what the worker was given.
 */
export async function selectBackend(
  choice: BackendChoice,
  threads = 1,
  device: DeviceAssignment | null = deviceFromEnv(),
): Promise<BackendReport> {
  registerGradients();
  const notes: string[] = [];
  const order = choice === "auto" ? autoOrder(device) : [choice];
  const skipped: string[] = [];
  for (const name of order) {
    const tried = await tryBackend(name, threads, device, choice === "auto");
    if (tried.ok) {
      // tfjs-node's absence is the normal case here; it is worth a word only when nothing better loaded.
      const relevant = name === "native" ? skipped.filter((s) => !/tfjs-node is not installed/.test(s)) : skipped;
      const note = describe(name, relevant);
      if (note) notes.push(note);
      const blas = name === "native" ? blasCoreNote() : null;
      if (blas) notes.push(blas);
      if (tried.gpu?.software)
        notes.push(
          `software GPU: "${tried.gpu.name}" (${tried.gpu.description}) is a CPU rasteriser, hundreds of times slower than "native": for tests and lessons, never for speed`,
        );
      return {
        backend: name,
        device: deviceOf(name, tried.gpu),
        memoryBytes: os.totalmem(),
        notes,
        ...(tried.gpu ? { gpu: tried.gpu } : {}),
      };
    }
    if (choice !== "auto") {
      throw new BackendError(`backend "${name}" is not available: ${tried.why}`, {
        hint: 'use .backend("auto") to take the best backend present, or install what is missing on the worker',
      });
    }
    skipped.push(`${name}: ${tried.why}`);
  }
  throw new BackendError(`no TF.js backend could be initialised (${skipped.join("; ")})`);
}

/**
 * Makes the driver's own TF.js use the best backend present (the native kernels, normally), so
 * that evaluating or predicting with a trained model in the notebook or script is fast too.
 * Returns the backend's name and what was skipped.
 */
export async function useBackend(choice: BackendChoice = "auto"): Promise<BackendReport> {
  return selectBackend(choice, 1);
}
