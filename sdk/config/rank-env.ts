import { ConfigError } from "../errors/errors";
import { firstHost } from "../util/hostlist";

/**
 * A process's place in a job, as the tool that started it says: TF_CONFIG, torchrun, Slurm,
 * Kubernetes Indexed Jobs or Open MPI, first found first. `source` names the variables read.
 */
export interface RankEnv {
  rank: number;
  /** Unknown for Kubernetes Indexed Jobs, whose pods are not told the job's size. */
  worldSize: number | undefined;
  localRank: number | undefined;
  /**
   * The host of rank 0, when the environment says: torchrun's MASTER_ADDR, TF_CONFIG's first
   * worker, the first node of Slurm's step (or job) node list. fromEnv() makes it the driver.
   */
  driverHost: string | undefined;
  source: string;
}

type Env = Readonly<Record<string, string | undefined>>;

function int(env: Env, name: string, source: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0)
    throw new ConfigError(`${name}=${JSON.stringify(raw)} is not a whole number (read for ${source})`, {
      hint: `unset ${name} or give it the process's index`,
    });
  return n;
}

function fromTfConfig(env: Env): RankEnv | null {
  const raw = env.TF_CONFIG;
  if (!raw) return null;
  let parsed: { cluster?: { worker?: unknown }; task?: { type?: unknown; index?: unknown } };
  try {
    parsed = JSON.parse(raw) as typeof parsed;
  } catch {
    throw new ConfigError("TF_CONFIG is not JSON", {
      hint: 'TF_CONFIG looks like {"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": 0}}',
    });
  }
  const workers = parsed.cluster?.worker;
  const index = parsed.task?.index;
  if (
    !Array.isArray(workers) ||
    typeof index !== "number" ||
    !Number.isInteger(index) ||
    index < 0 ||
    index >= workers.length ||
    parsed.task?.type !== "worker"
  ) {
    throw new ConfigError(
      'TF_CONFIG needs cluster.worker (a list of host:port) and task { type: "worker", index } within it',
      { hint: "meshtrain reads the worker list and this task's index; chief, ps and evaluator tasks are not used" },
    );
  }
  const [host] = String(workers[0]).split(/:(?=\d+$)/);
  return { rank: index, worldSize: workers.length, localRank: undefined, driverHost: host, source: "TF_CONFIG" };
}

function fromVars(
  env: Env,
  source: string,
  rankVar: string,
  sizeVar: string | null,
  localVar: string | null,
): RankEnv | null {
  const rank = int(env, rankVar, source);
  if (rank === undefined) return null;
  const worldSize = sizeVar ? int(env, sizeVar, source) : undefined;
  if (worldSize !== undefined && rank >= worldSize)
    throw new ConfigError(`${rankVar}=${rank} is not below ${sizeVar}=${worldSize}`, {
      hint: `ranks run from 0 to ${sizeVar} - 1`,
    });
  return {
    rank,
    worldSize,
    localRank: localVar ? int(env, localVar, source) : undefined,
    driverHost: undefined,
    source,
  };
}

/** The first environment that places this process, or null when none does. */
export function detectRankEnv(env: Env = process.env): RankEnv | null {
  const tf = fromTfConfig(env);
  if (tf) return tf;
  const torch = fromVars(env, "torchrun (RANK, WORLD_SIZE)", "RANK", "WORLD_SIZE", "LOCAL_RANK");
  if (torch) return { ...torch, driverHost: env.MASTER_ADDR || undefined };
  const slurm = fromVars(env, "Slurm (SLURM_PROCID, SLURM_NTASKS)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID");
  // A step's own node list first: a step may run on part of the job's nodes.
  if (slurm) return { ...slurm, driverHost: firstHost(env.SLURM_STEP_NODELIST || env.SLURM_JOB_NODELIST || "") };
  const k8s = fromVars(env, "Kubernetes Indexed Job (JOB_COMPLETION_INDEX)", "JOB_COMPLETION_INDEX", null, null);
  if (k8s) return k8s;
  return fromVars(
    env,
    "Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE)",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
  );
}

/** What `meshtrain env` prints: the place found and where it came from. */
export function describeRankEnv(r: RankEnv | null): string {
  if (!r)
    return "no rank in the environment (looked for TF_CONFIG, RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS, JOB_COMPLETION_INDEX, OMPI_COMM_WORLD_RANK): workers joining are ranked by arrival";
  const lines = [
    `rank ${r.rank} of ${r.worldSize ?? "an unknown number"} (from ${r.source})`,
    ...(r.localRank !== undefined ? [`local rank ${r.localRank}`] : []),
    ...(r.driverHost !== undefined ? [`rank 0 on ${r.driverHost} (the driver, with cluster().fromEnv())`] : []),
  ];
  return lines.join("\n");
}
