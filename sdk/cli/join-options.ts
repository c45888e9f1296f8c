import * as fs from "node:fs";
import { ConfigError } from "../errors/errors";
import { detectRankEnv } from "../config/rank-env";
import type { RankClaim } from "../protocol/join";
import { WorkerUrlSchema } from "../config/cluster-spec";
import { type JoinTarget } from "../worker/join-driver";
import { addressTowardsDriver } from "../transport/routes";

/** The token from --token-file, else --token, else MESHTRAIN_TOKEN (a file or the environment keep it out of `ps`). */
export function readToken(o: { token?: string; tokenFile?: string }): string | undefined {
  if (o.tokenFile === undefined) return o.token ?? process.env.MESHTRAIN_TOKEN;
  try {
    return fs.readFileSync(o.tokenFile, "utf8").trim();
  } catch (err) {
    throw new ConfigError(
      `cannot read the token file ${o.tokenFile}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      { hint: "give the path of a file holding the cluster token, readable by this user" },
    );
  }
}

/** This worker's rank: --rank, else what its environment says (Slurm, torchrun, TF_CONFIG...), else none. */
export function rankClaim(rank: number | undefined): RankClaim | null {
  if (rank !== undefined) return { rank, source: "--rank" };
  const env = detectRankEnv();
  return env
    ? { rank: env.rank, ...(env.worldSize !== undefined ? { worldSize: env.worldSize } : {}), source: env.source }
    : null;
}

/**
 * What `--join` needs: the driver's address checked, the rank claim, and the interface to listen
 * on (the one that routes to the driver, unless --host was given).
 */
export async function joinTarget(o: {
  join: string;
  rank?: number;
  joinTimeout: number;
  host: string;
  hostGiven: boolean;
}): Promise<{ target: JoinTarget; host: string }> {
  if (!WorkerUrlSchema.safeParse(o.join).success || o.join.startsWith("wss:"))
    throw new ConfigError(`--join ${o.join}: expected the driver's join address, ws://host:port`, {
      hint: "the driver prints it when join() waits, e.g. ws://10.0.0.1:7071",
    });
  const url = o.join.replace(/\/$/, "");
  const started = Date.now();
  const host = o.hostGiven ? o.host : await addressTowardsDriver(url, o.joinTimeout * 1000);
  // One --join-timeout for the whole join: what resolving the name took is not given again.
  return {
    target: { url, claim: rankClaim(o.rank), timeoutMs: Math.max(1000, o.joinTimeout * 1000 - (Date.now() - started)) },
    host,
  };
}
