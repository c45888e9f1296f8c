/** What a bundled worker can compute with besides TF.js's JavaScript CPU backend, each with its own files. */
export const BUNDLE_BACKENDS = ["native", "wasm", "webgpu"] as const;
export type BundleBackend = (typeof BUNDLE_BACKENDS)[number];

/** Dawn is 21 MiB on its own: a bundle takes it only when asked (`--backends native,wasm,webgpu`). */
export const DEFAULT_BUNDLE_BACKENDS: readonly BundleBackend[] = ["native", "wasm"];

/** What a bundle holds besides the worker: its backends, and bench:gpu (3.5 MiB; launchers ship bundles without it). */
export interface BundleContents {
  backends: readonly BundleBackend[];
  bench: boolean;
}
