import { execFileSync } from "node:child_process";

export interface GpuProbe {
  /** GPU indices this process may use. */
  indices: string[];
  /** Why GPUs cannot be used, when they cannot. */
  problem: string | null;
}

/**
 * Finds the GPUs local workers can use: those in CUDA_VISIBLE_DEVICES when it is set, else the
 * ones nvidia-smi lists; and only if @tensorflow/tfjs-node-gpu is installed to drive them.
 */
export function probeGpus(): GpuProbe {
  let indices: string[];
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  if (visible !== undefined) {
    indices = visible
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "" && s !== "-1");
  } else {
    try {
      const out = execFileSync("nvidia-smi", ["-L"], {
        encoding: "utf8",
        timeout: 5000,
        stdio: ["ignore", "pipe", "ignore"],
      });
      indices = out
        .split("\n")
        .filter((l) => /^GPU \d+/.test(l))
        .map((_, i) => String(i));
    } catch {
      return { indices: [], problem: "no NVIDIA GPU found (nvidia-smi is missing or lists none)" };
    }
  }
  if (indices.length === 0) return { indices, problem: "CUDA_VISIBLE_DEVICES hides every GPU" };
  try {
    require.resolve("@tensorflow/tfjs-node-gpu");
  } catch {
    return { indices, problem: `${indices.length} GPU(s) found, but @tensorflow/tfjs-node-gpu is not installed` };
  }
  return { indices, problem: null };
}
