import { discoverAdapters } from "./webgpu/discover";
import { icdManifests, loaderDir } from "./webgpu/vulkan";
import { probeGpus } from "./cuda-gpus";
import { tryBackend } from "./try-backend";

/** `meshtrain devices`: what this machine offers workers, as nvidia-smi -L and vulkaninfo would say it, and why not more. */
export async function describeDevices(): Promise<string> {
  const lines: string[] = [];
  const cuda = probeGpus();
  lines.push(
    cuda.problem
      ? `CUDA (tfjs-node-gpu): none usable: ${cuda.problem}`
      : `CUDA (tfjs-node-gpu): ${cuda.indices.map((i) => `cuda:${i}`).join(", ")}`,
  );
  const loader = loaderDir();
  lines.push(
    `Vulkan loader: ${loader ? `${loader.dir}/libvulkan.so.1${loader.onDefaultPath ? "" : " (a browser's copy: workers get it on their library path)"}` : "none"}`,
  );
  const manifests = icdManifests();
  lines.push(
    `Vulkan drivers: ${manifests.length === 0 ? "none" : manifests.map((m) => `${m.file}${m.software ? " (software)" : ""}`).join(", ")}`,
  );
  const survey = await discoverAdapters();
  lines.push(`WebGPU adapters (Dawn): ${survey.adapters.length === 0 ? "none" : ""}`);
  survey.adapters.forEach((a, i) => {
    const kind = a.software
      ? "software GPU (a CPU rasteriser: correct, slow; .gpus(n, { software: true }) to use it)"
      : "hardware";
    const reach = a.ordinal > 0 ? "; not reachable: Dawn's Node bindings pick the first adapter of this name" : "";
    lines.push(
      `  ${i}: ${a.name}: ${kind}; vendor ${a.vendor || "?"}, architecture ${a.architecture || "?"}, ${a.description}; buffers up to ${(a.maxBufferBytes / 2 ** 20).toFixed(0)} MiB${a.icd ? `; driver ${a.icd}` : ""}${reach}`,
    );
  });
  for (const p of survey.problems) lines.push(`  ${p}`);
  return lines.join("\n");
}

/**
 * The CPU backends a worker here can start, each tried in this process (`meshtrain devices`
 * prints them after the GPUs): tfjs-node, meshtrain's native kernels, wasm; with why not.
 */
export async function describeCpuBackends(): Promise<string> {
  const lines = ["CPU backends:"];
  for (const name of ["node", "native", "wasm"] as const) {
    const r = await tryBackend(name, 1, null, false);
    lines.push(`  ${name}: ${r.ok ? "available" : `not available: ${r.why}`}`);
  }
  return lines.join("\n");
}
