import * as os from "node:os";
import * as tf from "@tensorflow/tfjs";
import { BackendError } from "../errors/errors";
import type { BackendChoice, BackendName } from "../spec/backend";

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

async function tryBackend(name: BackendName): Promise<string | null> {
  switch (name) {
    case "node-gpu":
    case "node": {
      const why = loadNodeBinding(name === "node-gpu" ? "@tensorflow/tfjs-node-gpu" : "@tensorflow/tfjs-node");
      if (why) return why;
      return (await tf.setBackend("tensorflow")) ? null : "the tensorflow backend did not initialise";
    }
    case "wasm": {
      try {
        require("@tensorflow/tfjs-backend-wasm");
      } catch (err) {
        return `@tensorflow/tfjs-backend-wasm did not load: ${(err as Error).message.split("\n")[0]}`;
      }
      return (await tf.setBackend("wasm")) ? null : "the wasm backend did not initialise";
    }
    case "cpu":
      return (await tf.setBackend("cpu")) ? null : "the cpu backend did not initialise";
  }
}

function gpuDevice(): string {
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  return visible && visible !== "-1" ? `gpu:${visible.split(",")[0]}` : "gpu";
}

/**
 * Makes `choice` the TF.js backend of this process. "auto" takes the best one present, in the
 * order node-gpu (only on a worker given a GPU), node, cpu, and says in `notes` why a faster
 * one was not used.
 */
export async function selectBackend(choice: BackendChoice): Promise<BackendReport> {
  const notes: string[] = [];
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  const hasGpu = visible !== undefined && visible !== "" && visible !== "-1";
  const order: BackendName[] = choice !== "auto" ? [choice] : hasGpu ? ["node-gpu", "node", "cpu"] : ["node", "cpu"];
  const skipped: string[] = [];
  for (const name of order) {
    const why = await tryBackend(name);
    if (why === null) {
      if (name === "cpu") {
        notes.push(
          `workers use the stock TF.js "cpu" backend, whose kernels are plain JavaScript: expect low throughput` +
            (skipped.length > 0 ? ` (${skipped.join("; ")})` : ""),
        );
      } else if (skipped.length > 0) {
        notes.push(`workers use "${name}" (${skipped.join("; ")})`);
      }
      return { backend: name, device: name === "node-gpu" ? gpuDevice() : "cpu", memoryBytes: os.totalmem(), notes };
    }
    if (choice !== "auto") {
      throw new BackendError(`backend "${name}" is not available: ${why}`, {
        hint: 'use .backend("auto") to take the best backend present, or install the missing package on the worker',
      });
    }
    skipped.push(why);
  }
  throw new BackendError(`no TF.js backend could be initialised (${skipped.join("; ")})`);
}
