/**
 * Dawn, Chromium's WebGPU implementation, in Node through the `webgpu` package (an optional
 * dependency: its prebuilt dawn.node reaches Vulkan on Linux, Metal on macOS, D3D12 on Windows).
 * Adapters are chosen the way Dawn's Node bindings allow: by a substring of the adapter's device
 * name (the `adapter=` flag) and, across drivers, by which driver manifests the process sees.
 */
import { DAWN_MISSING } from "./dawn-missing";

/** The Dawn backend each platform's adapters run on. */
const PLATFORM_BACKEND = process.platform === "darwin" ? "metal" : process.platform === "win32" ? "d3d12" : "vulkan";

/** What a GPU adapter says of itself, and what meshtrain makes of it. */
export interface AdapterFacts {
  /** The driver's device name, e.g. "SwiftShader Device (Subzero)", "NVIDIA GeForce RTX 4090". */
  name: string;
  vendor: string;
  architecture: string;
  description: string;
  /** A CPU rasteriser (SwiftShader, llvmpipe, lavapipe): hundreds of times slower than meshtrain's native CPU kernels. */
  software: boolean;
  /** The largest buffer the adapter allows, bytes (a bound on what one tensor may hold). */
  maxBufferBytes: number;
  /** The Dawn backend it runs on (vulkan, metal, d3d12). */
  backend: string;
}

/** The subset of the WebGPU API meshtrain reads (the `webgpu` package's types are not a dependency of the SDK's types). */
interface Gpu {
  requestAdapter(options?: {
    powerPreference?: "low-power" | "high-performance";
    forceFallbackAdapter?: boolean;
  }): Promise<Adapter | null>;
}
interface Adapter {
  info: { vendor: string; architecture: string; device: string; description: string; isFallbackAdapter?: boolean };
  limits: { maxBufferSize: number };
}
interface WebgpuPackage {
  create(flags: string[]): Gpu;
  globals: Record<string, unknown>;
}

/** The `webgpu` package, or why it cannot be loaded. */
export function loadDawn(): { ok: true; pkg: WebgpuPackage } | { ok: false; reason: string } {
  try {
    require.resolve("webgpu");
  } catch {
    return { ok: false, reason: DAWN_MISSING };
  }
  try {
    // An ES module: Node 20.19+ requires it synchronously.
    return { ok: true, pkg: require("webgpu") as WebgpuPackage };
  } catch (err) {
    return { ok: false, reason: `the webgpu package did not load: ${(err as Error).message.split("\n")[0]}` };
  }
}

/** Whether the adapter is a CPU rasteriser: the browser's flag where it says, else the known software drivers by name. */
export function isSoftware(info: Adapter["info"]): boolean {
  if (info.isFallbackAdapter === true) return true;
  return /swiftshader|llvmpipe|lavapipe|software|microsoft basic render/i.test(
    `${info.vendor} ${info.architecture} ${info.device} ${info.description}`,
  );
}

function factsOf(a: Adapter, name: string, backend: string): AdapterFacts {
  const i = a.info;
  return {
    name,
    vendor: i.vendor,
    architecture: i.architecture,
    description: i.description,
    software: isSoftware(i),
    maxBufferBytes: a.limits.maxBufferSize,
    backend,
  };
}

/**
 * The adapters Dawn enumerates in this process (as its VK_ICD_FILENAMES lets it see). Dawn's
 * Node bindings hand out one adapter per request, the first whose name matches; asking for a
 * name no adapter has makes them list every adapter in the rejection, which is how they are
 * counted here. Then each distinct name is requested for its facts.
 */
export async function enumerateAdapters(pkg: WebgpuPackage): Promise<AdapterFacts[]> {
  const out: AdapterFacts[] = [];
  for (const { backend, name } of await listAdapters(pkg)) {
    const a = await pkg.create([`adapter=${name}`]).requestAdapter();
    if (a) out.push(factsOf(a, name, backend));
  }
  return out;
}

/** Every adapter Dawn lists, by backend and name (asking for a name no adapter has makes it list them all). */
async function listAdapters(pkg: WebgpuPackage): Promise<Array<{ backend: string; name: string }>> {
  try {
    await pkg.create(["adapter=\u0001meshtrain-lists-the-adapters"]).requestAdapter();
    return [];
  } catch (err) {
    return [...String(err).matchAll(/\* backend: '([^']*)', name: '([^']*)'/g)].map((m) => ({
      backend: m[1]!,
      name: m[2]!,
    }));
  }
}

/** The adapter named `given` (the first with that name; any adapter when name is empty), made this process's navigator.gpu. */
export async function useAdapter(
  pkg: WebgpuPackage,
  given: string,
): Promise<{ adapter: AdapterFacts } | { problem: string }> {
  // The driver's own name for the adapter (the JavaScript API gives a mangled one): the first listed, unless one was given.
  const name = given || (await listAdapters(pkg))[0]?.name || "";
  const flags = name ? [`adapter=${name}`] : [];
  let gpu: Gpu;
  let adapter: Adapter | null;
  try {
    gpu = pkg.create(flags);
    adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  } catch (err) {
    return { problem: `Dawn found no adapter${name ? ` named "${name}"` : ""}: ${String(err).split("\n").join("; ")}` };
  }
  if (!adapter) return { problem: "Dawn found no adapter (requestAdapter returned null)" };
  Object.assign(globalThis, pkg.globals);
  // TF.js's webgpu backend asks navigator.gpu for its adapter: it gets this one.
  const nav = (globalThis as unknown as { navigator?: Record<string, unknown> }).navigator;
  if (nav) nav.gpu = gpu;
  else Object.defineProperty(globalThis, "navigator", { value: { gpu }, configurable: true, writable: true });
  return { adapter: factsOf(adapter, name || adapter.info.device, PLATFORM_BACKEND) };
}
