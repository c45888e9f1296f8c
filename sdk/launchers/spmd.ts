import { ConfigError } from "../errors/errors";
import { detectRankEnv } from "../config/rank-env";

/** Where fromEnv() puts this process: its rank, the job's size, and where rank 0 (the driver) listens. */
export interface SpmdPlace {
  rank: number;
  worldSize: number;
  driverHost: string;
  port: number;
  /** The variables the rank came from, for messages. */
  source: string;
}

/** fromEnv(options): where rank 0 (the driver) listens and how many ranks the job has, where the environment does not say. */
export interface FromEnvOptions {
  /** Rank 0's host, or host:port: overrides what the environment says (also MESHTRAIN_DRIVER). */
  driver?: string;
  /** The port rank 0 listens on for the others (7071). torchrun's MASTER_PORT is its own store's, so it is not taken. */
  port?: number;
  /** The job's size, for environments that do not give it (Kubernetes Indexed Jobs). */
  workers?: number;
}

export const DEFAULT_JOIN_PORT = 7071;

type Env = Readonly<Record<string, string | undefined>>;

function splitDriver(value: string, from: string): { host: string; port: number | undefined } {
  const m = /^(\[[^\]]+\]|[^:\s]+)(?::(\d{1,5}))?$/.exec(value.trim());
  if (!m)
    throw new ConfigError(`${from}=${JSON.stringify(value)} is not a host or host:port`, {
      hint: 'give rank 0\'s host, e.g. "node01" or "10.0.0.2:7071"',
    });
  return { host: m[1]!.replace(/^\[|\]$/g, ""), port: m[2] === undefined ? undefined : Number(m[2]) };
}

/**
 * Reads this process's place in a job run the same way on every node (`srun -n 4 node train.js`,
 * torchrun-style variables, TF_CONFIG, Open MPI): every rank computes the same driver address
 * without talking, so the job needs nothing but its environment and the token.
 */
export function spmdPlace(env: Env, o: FromEnvOptions = {}): SpmdPlace {
  const found = detectRankEnv(env);
  if (!found) {
    throw new ConfigError(
      "fromEnv(): no rank in the environment (looked for TF_CONFIG, RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS, JOB_COMPLETION_INDEX, OMPI_COMM_WORLD_RANK)",
      {
        hint: "run the script under srun, torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR), TF_CONFIG or mpirun; or use join({ workers }) and start workers with meshtrain worker --join",
      },
    );
  }
  const worldSize = o.workers ?? found.worldSize;
  if (worldSize === undefined) {
    throw new ConfigError(
      `fromEnv(): ${found.source} gives this process's rank (${found.rank}) but not how many there are`,
      { hint: "pass fromEnv({ workers: n }) with the job's size (a Kubernetes Indexed Job's completions)" },
    );
  }
  if (found.worldSize !== undefined && o.workers !== undefined && o.workers !== found.worldSize) {
    throw new ConfigError(
      `fromEnv({ workers: ${o.workers} }) but ${found.source} says the job has ${found.worldSize}`,
      { hint: "drop workers: the environment's size is used" },
    );
  }
  if (found.rank >= worldSize)
    throw new ConfigError(`fromEnv(): rank ${found.rank} (${found.source}) is not below the job's size ${worldSize}`, {
      hint: "ranks run from 0 to the size - 1",
    });
  const given =
    o.driver !== undefined
      ? splitDriver(o.driver, "fromEnv({ driver })")
      : env.MESHTRAIN_DRIVER
        ? splitDriver(env.MESHTRAIN_DRIVER, "MESHTRAIN_DRIVER")
        : undefined;
  const driverHost = given?.host ?? found.driverHost;
  if (driverHost === undefined) {
    throw new ConfigError(`fromEnv(): ${found.source} does not say where rank 0 runs`, {
      hint: 'set MESHTRAIN_DRIVER=<rank 0\'s host> on every process, or pass fromEnv({ driver: "host" })',
    });
  }
  const port = o.port ?? given?.port ?? DEFAULT_JOIN_PORT;
  return { rank: found.rank, worldSize, driverHost, port, source: found.source };
}
