import * as tf from "@tensorflow/tfjs";
import { loadAddon } from "./addon";
import { NATIVE_BACKEND, NativeBackend } from "./backend";
import { convKernels } from "./kernels/conv";
import { elementwiseKernels } from "./kernels/elementwise";
import { batchMatMulKernel, fusedMatMulKernel } from "./kernels/matmul";
import { poolKernels } from "./kernels/pooling";
import { reduceKernels } from "./kernels/reduce";
import { gatherKernels } from "./kernels/gather";
import { shapeKernels, splitKernel } from "./kernels/shape";

export type NativeRegistration = { ok: true; kernels: string[] } | { ok: false; reason: string };

let registration: NativeRegistration | undefined;

/**
 * Registers the "native" backend: every stock cpu kernel, with meshtrain's native ones in place
 * of the hot ones. Low priority, so it is used only where it is chosen with tf.setBackend.
 */
export function registerNativeBackend(threads = 1): NativeRegistration {
  if (registration) return registration;
  const load = loadAddon();
  if (!load.ok) {
    registration = { ok: false, reason: `meshtrain's native kernels are not available: ${load.reason}` };
    return registration;
  }
  const addon = load.addon;
  addon.setThreads(threads);
  tf.registerBackend(NATIVE_BACKEND, () => new NativeBackend(addon), -1);
  const ours = [
    batchMatMulKernel,
    fusedMatMulKernel,
    ...elementwiseKernels,
    ...reduceKernels,
    ...convKernels,
    ...poolKernels,
    ...gatherKernels,
    ...shapeKernels,
    splitKernel,
  ];
  const overridden = new Set(ours.map((k) => k.kernelName));
  for (const k of tf.getKernelsForBackend("cpu")) {
    if (!overridden.has(k.kernelName)) tf.registerKernel({ ...k, backendName: NATIVE_BACKEND });
  }
  for (const k of ours) tf.registerKernel(k);
  registration = { ok: true, kernels: [...overridden].sort() };
  return registration;
}
