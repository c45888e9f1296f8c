/**
 * Compute backends a worker can run on, best first. "auto" picks the best one present.
 * - node-gpu, node: TF.js's libtensorflow bindings (optional packages; node-gpu on CUDA GPUs);
 * - webgpu: TF.js's WebGPU backend on Dawn (optional packages): any GPU with a Vulkan, Metal or
 *   D3D12 driver; "auto" takes it on a hardware adapter only;
 * - native: TF.js's cpu backend with meshtrain's native kernels over OpenBLAS (built by npm install);
 * - wasm: TF.js's wasm backend with meshtrain's kernels for what it lacks or does slowly;
 * - cpu: TF.js's stock JavaScript kernels (slow: the last resort).
 */
export const BACKEND_NAMES = ["node-gpu", "webgpu", "node", "native", "wasm", "cpu"] as const;
/** A TF.js backend a worker can run on (see BACKEND_NAMES for each). */
export type BackendName = (typeof BACKEND_NAMES)[number];
export const BACKEND_CHOICES = ["auto", ...BACKEND_NAMES] as const;
/** What .backend() takes: a backend by name, or "auto" for the best one present. */
export type BackendChoice = (typeof BACKEND_CHOICES)[number];
