import * as tf from "@tensorflow/tfjs";
import { quietCpuBanner } from "./quiet-banner";
import { NATIVE_BACKEND } from "./native/backend";
import { registerNativeBackend } from "./native/register";
import { patchWasmKernels } from "./wasm/patches";
import { registerWebgpu } from "./webgpu/register";
import type { BackendName } from "../protocol/backend-names";
import type { DeviceAssignment } from "../config/device";
import type { GpuFacts } from "../protocol/messages";

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

/** A backend started, or why not; a GPU backend also says which device it took. */
export type Tried = { ok: true; gpu?: GpuFacts } | { ok: false; why: string };

/**
 * Starts backend `name` in this process. webgpu takes the adapter `device` names (the first
 * adapter without one); with `hardwareOnly` (backend "auto") a software adapter is refused.
 */
export async function tryBackend(
  name: BackendName,
  threads: number,
  device: DeviceAssignment | null,
  hardwareOnly: boolean,
): Promise<Tried> {
  if (name === "webgpu") return tryWebgpu(device, hardwareOnly);
  const why = await tryCpuOrNode(name, threads);
  return why === null ? { ok: true } : { ok: false, why };
}

async function tryCpuOrNode(name: Exclude<BackendName, "webgpu">, threads: number): Promise<string | null> {
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

/** The webgpu backend on the adapter the worker was given, or the first one Dawn finds. */
async function tryWebgpu(device: DeviceAssignment | null, hardwareOnly: boolean): Promise<Tried> {
  const r = await registerWebgpu(device?.kind === "webgpu" ? device.adapter : "", {
    refuseSoftware: hardwareOnly && !(device?.kind === "webgpu" && device.software),
  });
  if ("problem" in r) return { ok: false, why: r.problem };
  const a = r.adapter;
  const driver = process.env.VK_ICD_FILENAMES;
  return {
    ok: true,
    gpu: {
      kind: "webgpu",
      name: a.name,
      vendor: a.vendor,
      architecture: a.architecture,
      description: a.description,
      software: a.software,
      maxBufferBytes: a.maxBufferBytes,
      ...(driver ? { driver } : {}),
    },
  };
}
