import * as fs from "node:fs";

/**
 * OpenBLAS picks its kernels from the CPU's family and model number. Virtual machines often hide
 * them ("Intel(R) Xeon(R) Processor"), and OpenBLAS then falls back to its oldest x86-64 kernels
 * (Prescott, SSE3): on such a VM with AVX-512 a matrix multiply ran 6x slower than the SkylakeX
 * kernels it could use. The instruction sets the kernel reports are a surer guide, so where the
 * user has not chosen a core type, the fastest one whose instructions every core has is chosen,
 * before the library loads (it reads OPENBLAS_CORETYPE once, when it is loaded).
 */
const CORES: ReadonlyArray<{ core: string; flags: readonly string[] }> = [
  { core: "SkylakeX", flags: ["avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"] },
  { core: "Haswell", flags: ["avx2", "fma"] },
  { core: "Sandybridge", flags: ["avx"] },
];

/** The core type to ask OpenBLAS for given /proc/cpuinfo's text, or null to leave its own choice. */
export function blasCoreFor(cpuinfo: string): string | null {
  const lines = cpuinfo.split("\n").filter((l) => /^flags\s*:/.test(l));
  if (lines.length === 0) return null;
  const sets = lines.map(
    (l) =>
      new Set(
        l
          .replace(/^flags\s*:/, "")
          .trim()
          .split(/\s+/),
      ),
  );
  return CORES.find((c) => sets.every((s) => c.flags.every((f) => s.has(f))))?.core ?? null;
}

/** Sets OPENBLAS_CORETYPE from the CPU's flags unless the user set it; returns what was chosen, if anything. */
export function chooseBlasCore(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.OPENBLAS_CORETYPE) return null;
  const cpuinfo = readCpuinfo();
  if (cpuinfo === null) return null;
  const core = blasCoreFor(cpuinfo);
  if (core) env.OPENBLAS_CORETYPE = core;
  return core;
}

/**
 * What a worker is told when the environment asks OpenBLAS for an older core type than every
 * core supports (a machine image that sets OPENBLAS_CORETYPE=Haswell on an AVX-512 CPU): the
 * choice is kept, as any user's is, but it costs. On an AVX-512 AMD EPYC, a 2048 x 128 x 512
 * matrix multiply ran 1.6-2.1x faster with SkylakeX's kernels than with Haswell's.
 */
export function blasCoreNote(env: NodeJS.ProcessEnv = process.env, cpuinfo = readCpuinfo()): string | null {
  const set = env.OPENBLAS_CORETYPE;
  const best = cpuinfo === null ? null : blasCoreFor(cpuinfo);
  if (!set || !best) return null;
  const rank = (core: string): number => CORES.findIndex((c) => c.core.toLowerCase() === core.toLowerCase());
  if (rank(set) <= rank(best)) return null;
  return `OPENBLAS_CORETYPE=${set} is set in this worker's environment, but every core has ${best}'s instructions: OpenBLAS's matrix multiplies run slower than they could (1.6-2.1x on an AVX-512 EPYC); unset it and meshtrain asks for ${best}`;
}

/** The fastest core type every core of this machine can take, or null where OpenBLAS should choose. */
export function bestBlasCore(): string | null {
  const cpuinfo = readCpuinfo();
  return cpuinfo === null ? null : blasCoreFor(cpuinfo);
}

function readCpuinfo(): string | null {
  if (process.platform !== "linux" || process.arch !== "x64") return null;
  try {
    return fs.readFileSync("/proc/cpuinfo", "utf8");
  } catch {
    return null;
  }
}
