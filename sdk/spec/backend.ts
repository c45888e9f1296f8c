/** Compute backends a worker can run on, best first. "auto" picks the best one present. */
export const BACKEND_NAMES = ["node-gpu", "node", "cpu", "wasm"] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];
export const BACKEND_CHOICES = ["auto", ...BACKEND_NAMES] as const;
export type BackendChoice = (typeof BACKEND_CHOICES)[number];
