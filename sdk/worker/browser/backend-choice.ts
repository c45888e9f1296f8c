import * as tf from "@tensorflow/tfjs";
import { registerGradients } from "../../backends/gradients";
import "@tensorflow/tfjs-backend-webgpu";
import { setWasmPaths } from "@tensorflow/tfjs-backend-wasm";
import type { MathBackendWebGL } from "@tensorflow/tfjs-backend-webgl";
import { BackendError } from "../../errors/errors";
import type { GpuFacts } from "../../protocol/messages";
import type { BackendReport } from "../../backends/select-backend";
import { machineMemoryBytes } from "../../backends/machine-memory";

/** What a tab can compute on, best first. */
export const TAB_BACKENDS = ["webgpu", "webgl", "wasm", "cpu"] as const;
export type TabBackend = (typeof TAB_BACKENDS)[number];

let chosen: BackendReport | null = null;

/** The backend this tab chose when it joined, for the page to show; null before. */
export function tabBackend(): BackendReport | null {
  return chosen;
}

type Tried = { ok: true; gpu?: GpuFacts } | { ok: false; why: string };

const SOFTWARE = /swiftshader|llvmpipe|lavapipe|software|basic render/i;

interface AdapterInfo {
  vendor?: string;
  architecture?: string;
  description?: string;
  isFallbackAdapter?: boolean;
}
interface GpuAdapterLike {
  info?: AdapterInfo;
  limits: { maxBufferSize: number };
}
interface NavigatorGpu {
  gpu?: { requestAdapter(): Promise<GpuAdapterLike | null> };
}

async function start(name: TabBackend): Promise<boolean> {
  try {
    if (!(await tf.setBackend(name))) return false;
    await tf.ready();
    return true;
  } catch {
    return false;
  }
}

async function tryWebgpu(): Promise<Tried> {
  const gpu = (navigator as NavigatorGpu).gpu;
  if (!gpu) return { ok: false, why: "this browser has no WebGPU" };
  const adapter = await gpu.requestAdapter().catch(() => null);
  if (!adapter) return { ok: false, why: "WebGPU offered no adapter" };
  const i = adapter.info ?? {};
  const description = i.description || [i.vendor, i.architecture].filter(Boolean).join(" ") || "unnamed adapter";
  const software = i.isFallbackAdapter === true || SOFTWARE.test(`${i.vendor} ${i.architecture} ${i.description}`);
  if (!(await start("webgpu"))) return { ok: false, why: "TF.js's webgpu backend did not start" };
  return {
    ok: true,
    gpu: {
      kind: "webgpu",
      name: description,
      vendor: i.vendor ?? "",
      architecture: i.architecture ?? "",
      description,
      software,
      maxBufferBytes: adapter.limits.maxBufferSize,
    },
  };
}

async function tryWebgl(): Promise<Tried> {
  if (!(await start("webgl"))) return { ok: false, why: "this browser gave TF.js no WebGL context" };
  const gl = (tf.backend() as MathBackendWebGL).gpgpu.gl;
  const debug = gl.getExtension("WEBGL_debug_renderer_info");
  const renderer = String(debug ? gl.getParameter(debug.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER));
  const vendor = String(debug ? gl.getParameter(debug.UNMASKED_VENDOR_WEBGL) : gl.getParameter(gl.VENDOR));
  return {
    ok: true,
    gpu: {
      kind: "webgl",
      name: renderer,
      vendor,
      architecture: `WebGL ${tf.env().getNumber("WEBGL_VERSION")}`,
      description: renderer,
      software: SOFTWARE.test(renderer),
      maxBufferBytes: gl.getParameter(gl.MAX_TEXTURE_SIZE) ** 2 * 16,
    },
  };
}

async function tryCpu(name: "wasm" | "cpu"): Promise<Tried> {
  if (name === "wasm") setWasmPaths(new URL("wasm/", self.location.href).href);
  return (await start(name)) ? { ok: true } : { ok: false, why: `TF.js's ${name} backend did not start` };
}

function tryBackend(name: TabBackend): Promise<Tried> {
  return name === "webgpu" ? tryWebgpu() : name === "webgl" ? tryWebgl() : tryCpu(name);
}

/**
 * Makes the tab's TF.js backend the one asked for, or ("auto") the best present: a GPU through
 * WebGPU, then WebGL, then wasm, then cpu, a software GPU (a CPU rasteriser: slower than wasm)
 * only when asked for by name. `notes` say why each better one was not taken.
 */
export async function chooseTabBackend(choice: TabBackend | "auto"): Promise<BackendReport> {
  registerGradients();
  const order: readonly TabBackend[] = choice === "auto" ? TAB_BACKENDS : [choice];
  const skipped: string[] = [];
  for (const name of order) {
    const tried = await tryBackend(name);
    if (!tried.ok) {
      skipped.push(`${name}: ${tried.why}`);
      continue;
    }
    if (tried.gpu?.software && choice === "auto") {
      skipped.push(`${name}: "${tried.gpu.name}" is a software GPU (a CPU rasteriser), slower than wasm`);
      continue;
    }
    const notes = [
      `this tab computes on "${name}"${skipped.length > 0 ? ` (${skipped.join("; ")})` : choice === "auto" ? " (the best this browser offers)" : " (asked for)"}`,
    ];
    if (tried.gpu?.software)
      notes.push(`software GPU: "${tried.gpu.name}" is a CPU rasteriser: for tests and lessons, never for speed`);
    const device = tried.gpu
      ? `${name}: ${tried.gpu.name}${tried.gpu.software ? " (software GPU, a CPU rasteriser)" : ""}`
      : `${name} (this tab's CPU)`;
    chosen = { backend: name, device, memoryBytes: tabMemoryBytes(), notes, ...(tried.gpu ? { gpu: tried.gpu } : {}) };
    return chosen;
  }
  throw new BackendError(
    `this tab could not start ${choice === "auto" ? "any TF.js backend" : `"${choice}"`}: ${skipped.join("; ")}`,
    { hint: "open the link in a current Chrome, Edge or Firefox" },
  );
}

/** The memory the browser says the device has (navigator.deviceMemory, rounded by the browser), or 0 where it does not say. */
export function tabMemoryBytes(): number {
  const said = machineMemoryBytes();
  return Number.isFinite(said) ? said : 0;
}
