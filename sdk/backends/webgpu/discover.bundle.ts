import type { AdapterSurvey } from "./discover";

export type { AdapterSurvey, LocalAdapter } from "./discover";

/**
 * In the worker bundle: Dawn's Node bindings (the webgpu package, a binary per platform) are not
 * inside it, so a bundled worker finds no WebGPU adapter, and says why instead of running a probe
 * that is not there.
 */
export function discoverAdapters(): Promise<AdapterSurvey> {
  return Promise.resolve({
    adapters: [],
    problems: [
      "Dawn's WebGPU bindings (the webgpu package) are not in the worker bundle: a GPU worker needs meshtrain installed with npm on its host",
    ],
  });
}
