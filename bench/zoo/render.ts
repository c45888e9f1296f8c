import { fmt, type Json } from "../common";
import { ZOO_MODELS } from "./models";

/** What a vCPU-hour costs in the seed article's table ($0.357 an hour for 8 vCPUs), for samples per dollar at one thread. */
export const VCPU_HOUR = 0.357 / 8;

/** The seed article's ResNet-50 rows (PyTorch 2.4, 8 vCPUs at $0.357 an hour, synthetic data): batch -> samples/s. */
const SEED_RESNET50: Readonly<Record<number, number>> = { 16: 13.06, 128: 9.12 };

/** One measured case of bench:zoo, as bench/results/zoo.json keeps it. */
export interface ZooRow {
  model: string;
  batch: number;
  optimizer: string;
  meshtrain: number;
  pytorch: number;
  ratio: number;
  native?: boolean;
  why?: string | null;
  autodiff: number | null;
  autodiffKernels: number | null;
  webgpu: number | null;
  webgpuKernels: number | null;
  peakMiB: number;
  estimateMiB: number | null;
  /** PyTorch's process, measured as meshtrain's worker is. */
  peerPeakMiB?: number;
  samplesPerDollar: number;
  peerSamplesPerDollar: number;
}

/** What the page says beside the rows: the run's shape and where it ran. */
export interface ZooRun {
  rounds: number;
  cpu: string;
  /** The WebGPU adapter the webgpu rows ran on, if any. */
  adapter: { name: string; software: boolean } | null;
  /** How peak memory was read: the kernel's high-water mark (mid-step included), or resident sets sampled between steps; "kernel, own pass" when `--memory` measured it again apart from the speeds. */
  memory: "kernel" | "kernel, own pass" | "sampled";
  /** Whether both sides ran with glibc's allocator keeping what they free (bench/common.ts ALLOCATOR_KEPT). */
  allocatorKept: boolean;
  /** The OpenBLAS core type both sides ran (OPENBLAS_CORETYPE), and the one the CPU could take; null where unknown. */
  blas?: { core: string | null; best: string | null } | null;
  /** Rows measured again after the run (`-- --rows`), when. */
  remeasured?: ReadonlyArray<{ rows: readonly string[]; date: string }>;
  rows: readonly ZooRow[];
}

const MEMORY_HOW: Readonly<Record<ZooRun["memory"], string>> = {
  kernel: "the kernel's high-water mark of the worker process's resident set through the timed steps (every page a step touched, mid-step included; with the allocator keeping what it frees, so memory freed and held counts too)",
  "kernel, own pass": "the kernel's high-water mark of the worker process's resident set through the steps (every page a step touched, mid-step included), measured in a pass of its own (`-- --memory`: a round's warm-up and timed steps, 2 to 330 by model, on each side, with glibc's allocator at its defaults as a worker runs)",
  sampled: "the worker process's resident set sampled after each step (what a step freed before it ended is missed, on both sides)",
};

/** Which rows' estimates lie within `within` of their measured peaks (issue 63's target: 15%). */
function estimateWithin(rows: readonly ZooRow[], within: number): string {
  const off = rows.filter((r) => r.estimateMiB !== null && Math.abs(r.estimateMiB - r.peakMiB) > within * r.peakMiB);
  const pct = `${Math.round(within * 100)}%`;
  if (off.length === 0) return `Every row's estimate is within ${pct} of its measured peak.`;
  const rowsOff = off.map((r) => `${r.model} ${r.optimizer} (${fmt(r.estimateMiB!, 1)} against ${fmt(r.peakMiB, 1)})`);
  return `Estimates more than ${pct} from the measured peak: ${rowsOff.join(", ")}.`;
}

const perDollar = (samplesPerSecond: number, dollarsPerHour: number): string => fmt((samplesPerSecond * 3600) / dollarsPerHour / 1000, 0) + "k";

/** bench/results/zoo.md from a run's rows. */
export function renderZoo(run: ZooRun): string {
  const table = [
    "| model | batch | optimizer | meshtrain samples/s | PyTorch samples/s | meshtrain / PyTorch | step | before (autodiff) | webgpu (software) | peak memory (MiB): measured / plan's estimate / PyTorch's |",
    "|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const r of run.rows) {
    const step = r.native === undefined ? "-" : r.native ? "native" : `autodiff: ${String(r.why)}`;
    const before = r.autodiff === null ? "-" : `${fmt(r.autodiff, 1)} (${String(r.autodiffKernels)} kernels a step)`;
    const webgpu = r.webgpu === null ? "-" : `${fmt(r.webgpu, 1)} (${String(r.webgpuKernels)} kernels)`;
    table.push(`| ${r.model} | ${r.batch} | ${r.optimizer} | ${fmt(r.meshtrain, 1)} | ${fmt(r.pytorch, 1)} | ${fmt(r.ratio)} | ${step} | ${before} | ${webgpu} | ${fmt(r.peakMiB, 0)} / ${r.estimateMiB === null ? "-" : fmt(r.estimateMiB, 0)} / ${r.peerPeakMiB === undefined ? "-" : fmt(r.peerPeakMiB, 0)} |`);
  }
  const seed = run.rows.filter((r) => r.model === "resnet50" && r.optimizer === "sgd" && SEED_RESNET50[r.batch] !== undefined);
  const dollars = seed.length === 0 ? [] : [
    "",
    `ResNet-50 beside the seed article's table, in samples per dollar (thousands; one vCPU at its price, $${VCPU_HOUR.toFixed(4)} an hour, against its 8 vCPUs at $0.357):`,
    "",
    "| batch | meshtrain, 1 vCPU: samples/s | per dollar | PyTorch 1.13, 1 vCPU: samples/s | per dollar | the seed's PyTorch 2.4, 8 vCPUs: samples/s | per dollar |",
    "|---|---|---|---|---|---|---|",
    ...seed.map((r) => `| ${r.batch} | ${fmt(r.meshtrain, 2)} | ${perDollar(r.meshtrain, VCPU_HOUR)} | ${fmt(r.pytorch, 2)} | ${perDollar(r.pytorch, VCPU_HOUR)} | ${fmt(SEED_RESNET50[r.batch]!, 2)} | ${perDollar(SEED_RESNET50[r.batch]!, 0.357)} |`),
    "",
    "The seed's machine and ours differ (its CPU, eight threads, bf16 and channels-last): per dollar is the only fair comparison between the two, and an approximate one.",
  ];
  return [
    `### The models people train: one worker against one PyTorch process (medians of ${run.rounds} interleaved rounds, one thread each)`,
    "",
    `Machine: ${run.cpu}. PyTorch 1.13 (Debian's: oneDNN for convolutions, OpenBLAS for the rest, given the same core type${blasWords(run.blas)}), meshtrain on its native backend (OpenBLAS); the same architectures, batch and optimizer (SGD lr 0.01, Adam lr 0.001), random inputs of each model's shape. ${run.allocatorKept ? "Both sides ran with glibc's allocator keeping what they free (MALLOC_MMAP_THRESHOLD_ 32 MiB, MALLOC_TRIM_THRESHOLD_ 4 GiB, MALLOC_TOP_PAD_ 512 MiB): without it PyTorch faults each step's activations back in, 1.6-3x slower here." : "PyTorch ran with glibc's allocator at its defaults, returning each step's activations to the system and faulting them back in (1.6-3x slower on this machine than with the allocator told to keep them): its figures here understate it."}`,
    "",
    ...table,
    "",
    ...Object.entries(ZOO_MODELS).map(([k, e]) => `- ${k}: ${e.what}.`),
    "",
    "step: how meshtrain's worker computed the step (native: the native step, no autodiff tape). before: the same model by TF.js's autodiff on the same native kernels (MESHTRAIN_NATIVE_STEP=0), one round, and the kernels TF.js dispatched in one step (the native step dispatches none). webgpu: the same by autodiff on the webgpu backend, one round;",
    run.adapter?.software ? `here the software adapter "${run.adapter.name}" (a CPU rasteriser): its figures compare only with each other; no real GPU has run this code.` : run.adapter ? `on "${run.adapter.name}".` : "no adapter here.",
    `Peak memory: ${MEMORY_HOW[run.memory]}, above the process's own as a worker's fit counts it (its resident set settled as the load message arrived, less the weights that came with it, with V8's young generation as the fit had it: \`ownBytes\`, read by the worker's own MemoryWatch), against the plan's estimate (parameters, gradient, optimizer state, the native step's arrays, and 2.4 MiB for what any fit grows the runtime by) and PyTorch's process measured from before it built the model. ${estimateWithin(run.rows, 0.15)}`,
    ...dollars,
    "",
    ...(run.remeasured ?? []).map((m) => `Measured again on ${m.date.slice(0, 10)}, both sides (\`-- --rows ${m.rows.join(",")}\`): ${m.rows.join(", ")}; their autodiff and webgpu columns are the run's.\n`),
    "Command: `npm run bench:zoo` (`-- --render` writes this page again from bench/results/zoo.json).",
  ].join("\n");
}

/** Which OpenBLAS kernels both sides' matrix multiplies ran, in words. */
function blasWords(b: ZooRun["blas"]): string {
  if (!b?.core) return "";
  const slower = b.best && b.best.toLowerCase() !== b.core.toLowerCase() ? `, as this machine's environment sets it; its CPU could take ${b.best}'s kernels, which ran a 2048 x 128 x 512 matrix product 1.6-2.1x faster` : "";
  return `: OPENBLAS_CORETYPE=${b.core}${slower}`;
}

/** A run as zoo.json holds it; runs written before the page's fields were kept fill them from the machine. */
export function zooRunOf(data: Json, fallback: Omit<ZooRun, "rows" | "memory" | "allocatorKept" | "blas">): ZooRun {
  const rows = data.rows as ZooRow[];
  return {
    rounds: typeof data.rounds === "number" ? data.rounds : fallback.rounds,
    cpu: typeof data.cpu === "string" ? data.cpu : fallback.cpu,
    adapter: data.adapter === undefined ? fallback.adapter : (data.adapter as ZooRun["adapter"]),
    memory: typeof data.memory === "string" ? (data.memory as ZooRun["memory"]) : "sampled",
    allocatorKept: data.allocatorKept === true,
    blas: ((data.machine as Json | undefined)?.blas as ZooRun["blas"]) ?? null,
    remeasured: (data.remeasured as ZooRun["remeasured"]) ?? [],
    rows,
  };
}
