import * as os from "node:os";
import { quietCpuBanner } from "./quiet-banner";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND } from "./native/backend";
import { registerNativeBackend } from "./native/register";
import { patchWasmKernels } from "./wasm/patches";
import { BackendError } from "../errors/errors";
import type { BackendChoice, BackendName } from "../protocol/backend-names";

/** The TF.js backend a process runs on, its device and memory, and why better ones were not used. */
export interface BackendReport {
  backend: string;
  device: string;
  memoryBytes: number;
  notes: string[];
}

/** Why a backend is missing, in words a user can act on; null when it loaded. */
function loadNodeBinding(pkg: "@tensorflow/tfjs-node" | "@tensorflow/tfjs-node-gpu"): string | null {
  try {
    require.resolve(pkg);
  } catch {
    return `${pkg} is not installed (its install step downloads libtensorflow; run npm install ${pkg} where that is possible)`;
  }
  try {
    require(pkg);
    return null;
  } catch (err) {
    return `${pkg} is installed but did not load: ${(err as Error).message.split("\n")[0]}`;
  }
}

async function tryBackend(name: BackendName, threads: number): Promise<string | null> {
  switch (name) {
    case "node-gpu":
    case "node": {
      const why = loadNodeBinding(name === "node-gpu" ? "@tensorflow/tfjs-node-gpu" : "@tensorflow/tfjs-node");
      if (why) return why;
      return (await tf.setBackend("tensorflow")) ? null : "the tensorflow backend did not initialise";
    }
    case "native": {
      const r = registerNativeBackend(threads);
      if (!r.ok) return r.reason;
      return (await tf.setBackend(NATIVE_BACKEND)) ? null : "the native backend did not initialise";
    }
    case "wasm": {
      try {
        require("@tensorflow/tfjs-backend-wasm");
      } catch (err) {
        return `@tensorflow/tfjs-backend-wasm did not load: ${(err as Error).message.split("\n")[0]}`;
      }
      // Before the backend starts: the patches' setup must run when it does.
      patchWasmKernels();
      return (await tf.setBackend("wasm")) ? null : "the wasm backend did not initialise";
    }
    case "cpu":
      quietCpuBanner();
      return (await tf.setBackend("cpu")) ? null : "the cpu backend did not initialise";
  }
}

function gpuDevice(): string {
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  return visible && visible !== "-1" ? `gpu:${visible.split(",")[0]}` : "gpu";
}

/** What the user is told about the backend in use, naming why better ones were not used. */
function describe(name: BackendName, skipped: string[]): string | null {
  const why = skipped.length > 0 ? ` (${skipped.join("; ")})` : "";
  switch (name) {
    case "native":
      return skipped.length > 0 ? `workers use "native": meshtrain's OpenBLAS kernels on TF.js's cpu backend${why}` : null;
    case "wasm":
      return `workers use "wasm" with meshtrain's kernels for what it lacks: slower than "native"${why}`;
    case "cpu":
      return `workers use the stock TF.js "cpu" backend, whose JavaScript kernels are 100-1500x slower than "native"${why}`;
    default:
      return skipped.length > 0 ? `workers use "${name}"${why}` : null;
  }
}

/**
 * Makes `choice` the TF.js backend of this process. "auto" takes the best one present, in the
 * order node-gpu (only on a worker given a GPU), node, native, wasm, cpu, and says in `notes` why
 * a faster one was not used. `threads` is this worker's share of the machine's cores.
 */
export async function selectBackend(choice: BackendChoice, threads = 1): Promise<BackendReport> {
  const notes: string[] = [];
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  const hasGpu = visible !== undefined && visible !== "" && visible !== "-1";
  const auto: BackendName[] = hasGpu ? ["node-gpu", "node", "native", "wasm", "cpu"] : ["node", "native", "wasm", "cpu"];
  const order = choice === "auto" ? auto : [choice];
  const skipped: string[] = [];
  for (const name of order) {
    const why = await tryBackend(name, threads);
    if (why === null) {
      // tfjs-node's absence is the normal case here; it is worth a word only when nothing better loaded.
      const relevant = name === "native" ? skipped.filter((s) => !/tfjs-node is not installed/.test(s)) : skipped;
      const note = describe(name, relevant);
      if (note) notes.push(note);
      return { backend: name, device: name === "node-gpu" ? gpuDevice() : "cpu", memoryBytes: os.totalmem(), notes };
    }
    if (choice !== "auto") {
      throw new BackendError(`backend "${name}" is not available: ${why}`, {
        hint: 'use .backend("auto") to take the best backend present, or install what is missing on the worker',
      });
    }
    skipped.push(`${name}: ${why}`);
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
