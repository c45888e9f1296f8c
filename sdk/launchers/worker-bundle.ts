import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ConfigError } from "../errors/errors";
import { VERSION } from "../protocol/sdk-version";
import { addNodeRuntime, START_SCRIPT } from "./node-runtime";
import { portableAddon } from "./portable-addon";
import { DEFAULT_BUNDLE_BACKENDS, type BundleBackend, type BundleContents } from "../config/bundle-backends";

const PACKAGE_ROOT = path.join(__dirname, "..", "..", "..");

/** One thing in the bundle, and why it is there (`meshtrain bundle --list`, and manifest.json). */
export interface BundlePart {
  path: string;
  bytes: number;
  why: string;
}

export interface BundleResult {
  file: string;
  /** The folder it extracts to. */
  dir: string;
  bytes: number;
  parts: BundlePart[];
  /** Why the bundle has no prebuilt native addon (null: it has one). */
  noPrebuilt: string | null;
}

/** The platform the bundle's prebuilt addon is built for: this machine's (nothing cross-compiles it). */
export function thisPlatform(): string {
  return `${process.platform}-${process.arch}`;
}

function copy(from: string, to: string): void {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(from, to);
}

/** The files, relative to `dir`, under it. */
function filesUnder(dir: string, prefix = ""): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(prefix, e.name);
    return e.isDirectory() ? filesUnder(path.join(dir, e.name), rel) : [rel];
  });
}

const WHY: ReadonlyArray<[RegExp, string]> = [
  [/^meshtrain-worker\.js$/, "the worker program: the SDK's worker side and the parts of TF.js it runs, one file"],
  [/^comm\/entry\.js$/, "the worker's communication thread (sockets, heartbeats, the all-reduce)"],
  [/\.wasm$/, "TF.js's wasm backend, for a host where the native addon neither loads nor builds"],
  [
    /^native\/build\/meshtrain_native\.node$/,
    "meshtrain's native CPU kernels, prebuilt for any x86-64 CPU of this platform (needs OpenBLAS on the host)",
  ],
  [/^native\/build\/status\.json$/, "how the prebuilt addon was built"],
  [/^node\/bin\/node$/, "Node itself (--with-node), from the npm registry's platform package of this Node version"],
  [/^meshtrain-worker$/, "starts the worker with the Node inside, else the host's: ./meshtrain-worker --join ..."],
  [
    /^native\/src\//,
    "the addon's C sources: rebuilt on a host where the prebuilt one does not load, if it has a compiler and OpenBLAS",
  ],
  [/^scripts\/build-native\.js$/, "the addon's build script"],
  [/^local-main\.js$/, "the worker its benchmark's 2-worker rows start on this host (node meshtrain-worker.js bench)"],
  [
    /^bench\//,
    "bench:gpu (node meshtrain-worker.js bench): the MLP and the CNN on every backend here, with the driver's side it needs",
  ],
  [/^probe-main\.js$/, "lists the WebGPU adapters Dawn finds, in a process of its own (meshtrain devices)"],
  [
    /^node_modules\/webgpu\/dist\//,
    "Dawn, Chromium's WebGPU, for this platform only (--backends ...,webgpu): GPU workers over Vulkan, Metal or D3D12",
  ],
  [/^node_modules\/webgpu\//, "Dawn's Node package around it (the webgpu package, its loader)"],
  [/^manifest\.json$/, "what this list says, with the version and platform"],
];

/** Dawn's package for this platform: its loader, and the one binary (of five in the package) this platform runs. */
function dawnFiles(): Array<[string, string]> {
  let root: string;
  try {
    root = path.dirname(require.resolve("webgpu/package.json"));
  } catch {
    throw new ConfigError("bundle --backends webgpu: the webgpu package (Dawn for Node) is not installed here", {
      hint: "npm install webgpu @tensorflow/tfjs-backend-webgpu beside meshtrain, or leave webgpu out of --backends",
    });
  }
  // The package's own rule for its folders (index.js): macOS has one universal build.
  const platform = `${process.platform}-${process.platform === "darwin" ? "universal" : process.arch}`;
  const dist = path.join(root, "dist", platform);
  if (!fs.existsSync(dist)) {
    throw new ConfigError(`bundle --backends webgpu: the webgpu package has no build for ${platform}`, {
      hint: "leave webgpu out of --backends: workers on this platform use the CPU backends",
    });
  }
  const at = (f: string): [string, string] => [path.join(root, f), path.join("node_modules", "webgpu", f)];
  return [at("package.json"), at("index.js"), ...filesUnder(dist).map((f) => at(path.join("dist", platform, f)))];
}

/** The files the bundle is made of, source path -> path in the bundle (its addon is built from them). */
function inputs({ backends, bench }: BundleContents): Array<[string, string]> {
  const built = path.join(PACKAGE_ROOT, "dist", "worker-bundle");
  if (!fs.existsSync(path.join(built, "meshtrain-worker.js"))) {
    throw new ConfigError(`the worker bundle's JavaScript is not built (${built})`, {
      hint: "run npm run build in the meshtrain package (scripts/build-worker-bundle.js)",
    });
  }
  const wasm = path.join(path.dirname(require.resolve("@tensorflow/tfjs-backend-wasm/package.json")), "dist");
  const src = path.join(PACKAGE_ROOT, "native", "src");
  const has = (b: BundleBackend): boolean => backends.includes(b);
  return [
    ...filesUnder(built)
      .filter((f) => bench || !(f.startsWith(`bench${path.sep}`) || f === "local-main.js"))
      .map((f): [string, string] => [path.join(built, f), f]),
    ...(has("wasm")
      ? fs
          .readdirSync(wasm)
          .filter((n) => n.endsWith(".wasm"))
          .map((f): [string, string] => [path.join(wasm, f), f])
      : []),
    ...(has("native")
      ? [
          ...fs.readdirSync(src).map((f): [string, string] => [path.join(src, f), path.join("native", "src", f)]),
          [path.join(PACKAGE_ROOT, "scripts", "build-native.js"), path.join("scripts", "build-native.js")] as [
            string,
            string,
          ],
        ]
      : []),
    ...(has("webgpu") ? dawnFiles() : []),
  ];
}

/**
 * What identifies a bundle's contents: a hash of its files (not of the .tar.gz, whose times
 * and compiled addon differ from one making to the next), the version and the platform. The
 * launchers cache a bundle under it, here and on the hosts.
 */
export function bundleKey(c: BundleContents = { backends: DEFAULT_BUNDLE_BACKENDS, bench: true }): string {
  const h = createHash("sha256").update(`${VERSION} ${thisPlatform()}\n`);
  for (const [from, to] of inputs(c).sort((a, b) => a[1].localeCompare(b[1])))
    h.update(`${to}\n`).update(fs.readFileSync(from));
  return h.digest("hex").slice(0, 24);
}

/** Stages the bundle's files in `dir`; returns why it has no prebuilt addon, or null. */
function stage(dir: string, c: BundleContents): string | null {
  for (const [from, to] of inputs(c)) copy(from, path.join(dir, to));
  if (!c.backends.includes("native")) return "the bundle was made without the native backend (--backends)";
  // Built for CPUs other than this one (the package's own addon uses every instruction this CPU has), once per source.
  const addon = portableAddon();
  if ("reason" in addon) return addon.reason;
  for (const f of ["meshtrain_native.node", "status.json"])
    copy(path.join(addon.dir, f), path.join(dir, "native", "build", f));
  return null;
}

function describe(dir: string): BundlePart[] {
  return filesUnder(dir)
    .sort()
    .map((f) => {
      const rel = f.split(path.sep).join("/");
      return {
        path: rel,
        bytes: fs.statSync(path.join(dir, f)).size,
        why: WHY.find(([re]) => re.test(rel))?.[1] ?? "",
      };
    });
}

/**
 * `meshtrain bundle`: the worker side alone as one .tar.gz, for hosts that have Node and nothing
 * else (no npm, no registry): extracted anywhere, `node meshtrain-worker-VERSION/meshtrain-worker.js`
 * takes `meshtrain worker`'s flags. Its prebuilt addon is this platform's.
 */
export function makeBundle(o: {
  out?: string;
  platform?: string;
  withNode?: boolean;
  backends?: readonly BundleBackend[];
  /** bench:gpu inside (`node meshtrain-worker.js bench`): true unless said otherwise. */
  bench?: boolean;
}): BundleResult {
  const backends = o.backends ?? DEFAULT_BUNDLE_BACKENDS;
  const bench = o.bench ?? true;
  if (o.platform !== undefined && o.platform !== thisPlatform()) {
    throw new ConfigError(`bundle --platform ${o.platform}: this machine builds bundles for ${thisPlatform()} only`, {
      hint: `make the bundle on a ${o.platform} machine with meshtrain installed (its addon is compiled there)`,
    });
  }
  const name = `meshtrain-worker-${VERSION}`;
  const file = path.resolve(o.out ?? `${name}-${thisPlatform()}.tar.gz`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-bundle-"));
  try {
    const dir = path.join(tmp, name);
    const noPrebuilt = stage(dir, { backends, bench });
    fs.writeFileSync(path.join(dir, "meshtrain-worker"), START_SCRIPT, { mode: 0o755 });
    if (o.withNode) addNodeRuntime(dir);
    const manifest = {
      version: VERSION,
      platform: thisPlatform(),
      node: process.version,
      nodeInside: o.withNode === true,
      backends,
      bench,
      prebuiltAddon: noPrebuilt === null,
      parts: describe(dir),
    };
    fs.writeFileSync(path.join(dir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    const tar = spawnSync("tar", ["-czf", file, "-C", tmp, name], { encoding: "utf8" });
    if (tar.status !== 0)
      throw new ConfigError(`tar could not write ${file}: ${tar.stderr || tar.error?.message}`, {
        hint: "check that the folder exists and can be written, and that tar is installed",
      });
    return { file, dir: name, bytes: fs.statSync(file).size, parts: describe(dir), noPrebuilt };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
