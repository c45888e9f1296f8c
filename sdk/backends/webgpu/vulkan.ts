import * as fs from "node:fs";
import * as path from "node:path";

/**
 * What Dawn needs on Linux to reach a GPU: the Vulkan loader (libvulkan.so.1) and a driver's ICD
 * manifest (a JSON file naming the driver's library). A machine with a GPU driver installed has
 * both; a machine without one can still run WebGPU on a software driver: the SwiftShader ICD that
 * Chromium ships beside its own copy of the loader. meshtrain looks for both here, so a worker asked
 * for webgpu finds them without the user setting VK_ICD_FILENAMES or LD_LIBRARY_PATH.
 */

/** Where Vulkan drivers install their manifests (the loader's own search path on Linux). */
const SYSTEM_ICD_DIRS = [
  "/etc/vulkan/icd.d",
  "/usr/local/etc/vulkan/icd.d",
  "/usr/share/vulkan/icd.d",
  "/usr/local/share/vulkan/icd.d",
];

/** Where browsers keep SwiftShader's Vulkan ICD and their loader (Debian's and Ubuntu's chromium, Google Chrome). */
const SOFTWARE_ICD_DIRS = [
  "/usr/lib/chromium",
  "/usr/lib/chromium-browser",
  "/snap/chromium/current/usr/lib/chromium-browser",
  "/opt/google/chrome",
];

/** Where distributions put the system's Vulkan loader. */
const LOADER_DIRS = [
  "/usr/lib/x86_64-linux-gnu",
  "/usr/lib/aarch64-linux-gnu",
  "/usr/lib64",
  "/usr/lib",
  "/lib/x86_64-linux-gnu",
];

/** One Vulkan driver manifest, and whether it is a software rasteriser (the CPU pretending to be a GPU). */
export interface IcdManifest {
  file: string;
  /** The driver's library as the manifest names it. */
  library: string;
  software: boolean;
}

function readManifest(file: string): IcdManifest | null {
  try {
    const json = JSON.parse(fs.readFileSync(file, "utf8")) as { ICD?: { library_path?: unknown } };
    const library = json.ICD?.library_path;
    if (typeof library !== "string") return null;
    return { file, library, software: /swiftshader|lvp|lavapipe|llvmpipe/i.test(`${path.basename(file)} ${library}`) };
  } catch {
    return null;
  }
}

function manifestsIn(dir: string): IcdManifest[] {
  try {
    return fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".json"))
      .sort()
      .map((f) => readManifest(path.join(dir, f)))
      .filter((m): m is IcdManifest => m !== null);
  } catch {
    return [];
  }
}

/**
 * The driver manifests this machine has: those VK_ICD_FILENAMES or VK_DRIVER_FILES name when set
 * (the loader's own override, honoured here the same way), else the system's drivers plus the
 * first software ICD a browser installed.
 */
export function icdManifests(env: NodeJS.ProcessEnv = process.env): IcdManifest[] {
  const given = env.VK_DRIVER_FILES ?? env.VK_ICD_FILENAMES;
  if (given)
    return given
      .split(":")
      .filter((f) => f !== "")
      .map((f) => readManifest(f))
      .filter((m): m is IcdManifest => m !== null);
  const system = SYSTEM_ICD_DIRS.flatMap(manifestsIn);
  const software = SOFTWARE_ICD_DIRS.flatMap(manifestsIn)
    .filter((m) => m.software)
    .slice(0, 1);
  return [...system, ...software];
}

/** The folder holding a Vulkan loader (libvulkan.so.1) the dynamic linker finds, or one a browser ships; null when there is none. */
export function loaderDir(env: NodeJS.ProcessEnv = process.env): { dir: string; onDefaultPath: boolean } | null {
  const onPath = [...(env.LD_LIBRARY_PATH ?? "").split(":").filter((d) => d !== ""), ...LOADER_DIRS].find((d) =>
    fs.existsSync(path.join(d, "libvulkan.so.1")),
  );
  if (onPath) return { dir: onPath, onDefaultPath: true };
  const bundled = SOFTWARE_ICD_DIRS.find((d) => fs.existsSync(path.join(d, "libvulkan.so.1")));
  return bundled ? { dir: bundled, onDefaultPath: false } : null;
}

/**
 * The environment a process needs to reach `manifest` through Dawn (every driver found, when
 * null): the loader restricted to that driver (so the process sees its adapters only), and the
 * loader's folder on the library path where the system has none. The dynamic linker reads
 * LD_LIBRARY_PATH when a process starts, so this is set for a process before it starts.
 */
export function vulkanEnv(manifest: IcdManifest | null, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  const files = manifest ? [manifest.file] : icdManifests(env).map((m) => m.file);
  if (files.length > 0) out.VK_ICD_FILENAMES = files.join(":");
  const loader = loaderDir(env);
  if (loader && !loader.onDefaultPath)
    out.LD_LIBRARY_PATH = [loader.dir, env.LD_LIBRARY_PATH].filter((p) => p).join(":");
  // Dawn warns on every start without it; a worker has no display session to point it at.
  if (!env.XDG_RUNTIME_DIR) out.XDG_RUNTIME_DIR = fs.existsSync("/tmp") ? "/tmp" : ".";
  return out;
}

/** Why Dawn cannot reach any Vulkan driver here, in words a user can act on; null when it can try. */
export function vulkanProblem(env: NodeJS.ProcessEnv = process.env): string | null {
  if (process.platform !== "linux") return null;
  if (!loaderDir(env))
    return "no Vulkan loader (libvulkan.so.1): install your GPU's driver with its Vulkan support (Debian: libvulkan1 and the driver's ICD), or Debian's chromium package for a software adapter";
  if (icdManifests(env).length === 0)
    return `no Vulkan driver (ICD manifest) in ${SYSTEM_ICD_DIRS.join(", ")}, nor a browser's SwiftShader: install your GPU's Vulkan driver, or Debian's chromium package for a software adapter`;
  return null;
}

/** Whether a GPU's Vulkan driver (not a software rasteriser) is installed: worth loading Dawn to look at it. */
export function hardwareVulkanDriver(env: NodeJS.ProcessEnv = process.env): boolean {
  return process.platform === "linux"
    ? loaderDir(env) !== null && icdManifests(env).some((m) => !m.software)
    : process.platform === "darwin" || process.platform === "win32";
}
