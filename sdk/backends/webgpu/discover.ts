import { spawn } from "node:child_process";
import type { AdapterFacts } from "./dawn";
import { icdManifests, vulkanEnv, vulkanProblem, type IcdManifest } from "./vulkan";
import { PROBE } from "./probe-path";

/** A WebGPU adapter a worker on this machine can be given: the driver it comes from, and its facts. */
export interface LocalAdapter extends AdapterFacts {
  /** The Vulkan driver manifest it comes from (a worker given it sees only that driver). */
  icd: string | null;
  /** Its position among the adapters of that driver with the same name (Dawn's Node bindings reach only the first). */
  ordinal: number;
}

/** What a look for WebGPU adapters found, and why it found none where it found none. */
export interface AdapterSurvey {
  adapters: LocalAdapter[];
  problems: string[];
}

/** Runs the probe with `env` added; resolves with its report (never rejects: a failed probe is a problem said in words). */
function probe(
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{ adapters: AdapterFacts[]; problem: string | null }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [PROBE], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) return resolve(JSON.parse(line) as { adapters: AdapterFacts[]; problem: string | null });
      const why = signal === "SIGKILL" ? `did not answer within ${timeoutMs / 1000} s` : `exited (${signal ?? code})`;
      resolve({
        adapters: [],
        problem: `the adapter probe ${why}${err.trim() ? `: ${err.trim().split("\n").slice(-2).join(" ")}` : ""}`,
      });
    });
  });
}

/**
 * The WebGPU adapters local workers can be given: each Vulkan driver this machine has (see
 * vulkan.ts) probed on its own, as a worker given that driver would see it. Adapters that share
 * a name within one driver are listed, but only the first (ordinal 0) can be handed to a worker.
 */
export async function discoverAdapters(timeoutMs = 30_000): Promise<AdapterSurvey> {
  if (process.platform !== "linux") {
    const r = await probe({}, timeoutMs);
    return {
      adapters: r.adapters.map((a, i, all) => ({
        ...a,
        icd: null,
        ordinal: all.slice(0, i).filter((b) => b.name === a.name).length,
      })),
      problems: r.problem ? [r.problem] : [],
    };
  }
  const problem = vulkanProblem();
  if (problem) return { adapters: [], problems: [problem] };
  const adapters: LocalAdapter[] = [];
  const problems: string[] = [];
  const reports = await Promise.all(
    icdManifests().map(async (m: IcdManifest) => ({ m, r: await probe(vulkanEnv(m), timeoutMs) })),
  );
  for (const { m, r } of reports) {
    if (r.problem) problems.push(`${m.file}: ${r.problem}`);
    if (r.adapters.length === 0 && !r.problem)
      problems.push(`${m.file}: Dawn found no adapter it accepts on this driver`);
    r.adapters.forEach((a, i) =>
      adapters.push({ ...a, icd: m.file, ordinal: r.adapters.slice(0, i).filter((b) => b.name === a.name).length }),
    );
  }
  return { adapters, problems };
}
