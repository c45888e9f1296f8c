import * as tf from "@tensorflow/tfjs";
import { loadDawn, useAdapter, type AdapterFacts } from "./dawn";
import { loaderDir, vulkanEnv, vulkanProblem } from "./vulkan";

/**
 * Makes TF.js's webgpu backend (@tensorflow/tfjs-backend-webgpu, an optional dependency) this
 * process's backend, on the adapter named `adapterName` (the first adapter when empty; a software
 * one only unless `refuseSoftware`). Returns
 * the adapter, or why it cannot: the package missing, no Vulkan loader or driver, no adapter
 * (with Dawn's own message), or the backend refusing to start.
 */
export async function registerWebgpu(
  adapterName: string,
  o: { refuseSoftware: boolean },
): Promise<{ adapter: AdapterFacts } | { problem: string }> {
  const dawn = loadDawn();
  if (!dawn.ok) return { problem: dawn.reason };
  const vk = vulkanProblem() ?? loaderOffPath();
  if (vk) return { problem: vk };
  // The loader reads which drivers to use when Dawn starts it: the ones meshtrain found, unless the user chose.
  const drivers = vulkanEnv(null).VK_ICD_FILENAMES;
  if (!process.env.VK_ICD_FILENAMES && !process.env.VK_DRIVER_FILES && drivers) process.env.VK_ICD_FILENAMES = drivers;
  const chosen = await useAdapter(dawn.pkg, adapterName);
  if ("problem" in chosen) return chosen;
  try {
    // The package registers its backend when it loads, only where navigator.gpu exists: after useAdapter.
    // A plain require (no require.resolve first): the worker bundle has the package inside itself.
    require("@tensorflow/tfjs-backend-webgpu");
  } catch (err) {
    const missing = (err as { code?: string }).code === "MODULE_NOT_FOUND";
    return {
      problem: missing
        ? "@tensorflow/tfjs-backend-webgpu is not installed: npm install webgpu @tensorflow/tfjs-backend-webgpu"
        : `@tensorflow/tfjs-backend-webgpu did not load: ${(err as Error).message.split("\n")[0]}`,
    };
  }
  if (o.refuseSoftware && chosen.adapter.software) {
    return {
      problem: `the only adapter is a software GPU ("${chosen.adapter.name}", ${chosen.adapter.description}), which "auto" never takes: it is slower than the CPU backends (ask for it with .backend("webgpu") or .gpus(n, { software: true }))`,
    };
  }
  try {
    if (!(await tf.setBackend("webgpu")))
      return { problem: "TF.js's webgpu backend did not initialise on the adapter" };
  } catch (err) {
    return { problem: `TF.js's webgpu backend failed to start: ${(err as Error).message.split("\n")[0]}` };
  }
  return chosen;
}

/** A Vulkan loader this process cannot load: one a browser ships, off the library path it started with. */
function loaderOffPath(): string | null {
  const loader = loaderDir();
  if (process.platform !== "linux" || !loader || loader.onDefaultPath) return null;
  return `the Vulkan loader is ${loader.dir}/libvulkan.so.1, off the library path this process started with: start it with LD_LIBRARY_PATH=${loader.dir} (meshtrain's local workers and \`meshtrain worker --backend webgpu\` are started so)`;
}
