import type { ClusterSpec } from "../config/cluster-spec";
import { addressTowardsDriver } from "../transport/routes";

/**
 * fromEnv() on a rank other than 0: this process becomes that rank's worker. It joins the
 * driver (rank 0, retrying while rank 0 starts), serves until the driver closes the cluster or
 * dies, and then ends the process with the worker's exit code: code after launch() runs on
 * rank 0 alone, as torchrun users write `if rank == 0:` around what the driver does.
 */
export async function serveAsMember(
  spec: ClusterSpec,
  place: { rank: number; source: string; worldSize: number; host: string; port: number; timeoutMs: number },
): Promise<never> {
  const host = place.host.includes(":") ? `[${place.host}]` : place.host;
  const url = `ws://${host}:${place.port}`;
  // Loaded here, on this rank only: a driver (rank 0) never loads the worker's code.
  const { runWorker } = require("../worker/main") as typeof import("../worker/main");
  const code = await runWorker({
    host: await addressTowardsDriver(url, place.timeoutMs),
    port: 0,
    token: spec.token,
    maxFrameBytes: spec.maxFrameBytes,
    exitWithDriver: false,
    join: {
      url,
      claim: { rank: place.rank, worldSize: place.worldSize, source: place.source },
      timeoutMs: place.timeoutMs,
    },
  });
  process.exit(code);
}
