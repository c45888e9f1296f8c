/** Why a bundled worker has no Dawn: the bundle was made without it (Dawn is 21 MiB, so it is asked for). */
export const DAWN_MISSING =
  "Dawn's WebGPU bindings (the webgpu package) are not in this worker bundle: make it with meshtrain bundle --backends native,wasm,webgpu";
