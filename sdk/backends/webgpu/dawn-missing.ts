/** Why a process has no Dawn, as an npm-installed meshtrain says it (the worker bundle says its own: dawn-missing.bundle.ts). */
export const DAWN_MISSING =
  "the webgpu package (Dawn for Node) is not installed: npm install webgpu @tensorflow/tfjs-backend-webgpu";
