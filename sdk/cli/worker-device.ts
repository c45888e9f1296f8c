import { spawn } from "node:child_process";
import { cpuDevice, gpuDevices } from "../backends/local-devices";
import type { ClusterSpec } from "../config/cluster-spec";
import { DEFAULT_SPEC } from "../config/cluster-spec";
import { vulkanEnv } from "../backends/webgpu/vulkan";

/** Set in a worker that was started again with its device's environment, so it does not start itself again. */
const READY = "MESHTRAIN_DEVICE_READY";

/**
 * `meshtrain worker --gpu k` (the k-th GPU of this machine, as `meshtrain devices` numbers the usable
 * ones; `--software` counts software adapters) and `--backend name` (the worker's own choice when
 * the driver asks for "auto"). The Vulkan loader's library path is read when a process starts, so
 * a worker given a WebGPU adapter runs again as a child with its device's environment, its stdio
 * and signals passed through, and exits with its code. Returns false when this process is the one
 * to serve.
 */
export async function restartedWithDevice(o: { gpu?: number; software?: boolean; backend?: string }): Promise<boolean> {
  if (process.env[READY] || (o.gpu === undefined && o.backend === undefined)) return false;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    [READY]: "1",
    ...(o.backend ? { MESHTRAIN_BACKEND: o.backend } : {}),
  };
  if (o.gpu !== undefined) {
    const spec: ClusterSpec = {
      ...DEFAULT_SPEC,
      workers: { kind: "local", count: o.gpu + 1, devices: "gpu", ...(o.software ? { software: true } : {}) },
    };
    const { devices } = await gpuDevices(spec, o.gpu + 1);
    Object.assign(env, devices[o.gpu]!.env);
  } else if (o.backend === "webgpu") {
    Object.assign(env, vulkanEnv(null));
  } else if (o.backend !== "node-gpu") {
    Object.assign(env, cpuDevice().env);
  }
  // The IPC channel is how the child learns its parent died, even of a SIGKILL that cannot be
  // passed on: a worker ends when its channel closes (worker/main.ts), never left as an orphan.
  const child = spawn(process.execPath, process.argv.slice(1), {
    env,
    stdio: ["inherit", "inherit", "inherit", "ipc"],
  });
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(sig, () => child.kill(sig));
  const code = await new Promise<number>((resolve) => child.on("exit", (c, s) => resolve(c ?? (s ? 128 : 1))));
  process.exit(code);
}
