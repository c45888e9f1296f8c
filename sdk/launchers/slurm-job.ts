import { execFile, spawn, spawnSync } from "node:child_process";
import { LaunchError } from "../errors/errors";

/** What `scontrol show job` says of a job. */
export interface JobStatus {
  state: string;
  reason: string;
  nodes: string;
  exitCode: string;
}

/** States a job does not come back from. */
export const ENDED_STATES = new Set([
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "TIMEOUT",
  "NODE_FAIL",
  "PREEMPTED",
  "BOOT_FAIL",
  "DEADLINE",
  "OUT_OF_MEMORY",
]);

function run(
  cmd: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string; error?: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err
        ? typeof (err as { code?: unknown }).code === "number"
          ? (err as { code: number }).code
          : null
        : 0;
      resolve({
        code,
        stdout: String(stdout),
        stderr: String(stderr),
        ...(err && code === null ? { error: err.message } : {}),
      });
    });
  });
}

/** Submits `script` with sbatch (its environment carries the token: never argv) and returns the job id. */
export function submitJob(script: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("sbatch", ["--parsable", ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (err += c.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(
        new LaunchError(`cannot run sbatch here (${e.message})`, {
          hint: "run the driver on a Slurm login node (slurm-client installed, SLURM_CONF or /etc/slurm/slurm.conf set up)",
        }),
      );
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      const id = /^(\d+)/.exec(out.trim())?.[1];
      if (code === 0 && id) resolve(id);
      else
        reject(
          new LaunchError(`sbatch refused the job (exit ${code}): ${err.trim() || out.trim() || "no message"}`, {
            hint: sbatchHint(err),
          }),
        );
    });
    child.stdin.end(script);
  });
}

/** What to do about sbatch's refusal: a machine that is not a Slurm client is not an options problem. */
function sbatchHint(stderr: string): string {
  if (/configuration source|Unable to contact slurm controller|slurm\.conf/i.test(stderr)) {
    return "this machine has no Slurm configuration, or cannot reach its controller: launch from a login node of the cluster (or set SLURM_CONF to its slurm.conf); `sinfo` works there";
  }
  return "check the slurm() options (partition, account, time, args) against `sinfo` and your cluster's rules";
}

/** The job's state, or null when Slurm no longer knows it (purged after MinJobAge) or cannot be asked. */
export async function jobStatus(id: string): Promise<JobStatus | null> {
  const r = await run("scontrol", ["show", "job", id, "--oneliner"], 10_000);
  if (r.code !== 0) return null;
  const field = (name: string): string => new RegExp(`(?:^|\\s)${name}=(\\S*)`).exec(r.stdout)?.[1] ?? "";
  return { state: field("JobState"), reason: field("Reason"), nodes: field("NodeList"), exitCode: field("ExitCode") };
}

export async function cancelJob(id: string): Promise<void> {
  await run("scancel", [id], 15_000);
}

/** For the driver's exit, when nothing asynchronous runs any more. */
export function cancelJobNow(id: string): void {
  spawnSync("scancel", [id], { stdio: "ignore", timeout: 5000 });
}

/** The controller's host (SlurmctldHost): compute nodes reach it, so the interface towards it is the one they reach the driver by. */
export async function controllerHost(): Promise<string | undefined> {
  const r = await run("scontrol", ["show", "config"], 10_000);
  const m = /^SlurmctldHost\[0\]\s*=\s*([^\s(]+)(?:\(([^)]+)\))?/m.exec(r.stdout);
  return m ? (m[2] ?? m[1]) : undefined;
}
