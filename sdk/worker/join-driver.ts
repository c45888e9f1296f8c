import { machineName } from "../util/machine-name";
import * as os from "node:os";
import { isMeshtrainError, TimeoutError } from "../errors/errors";
import type { JoinAssigned } from "../protocol/join";
import { offerHandshake } from "../transport/handshake";
import { exchangeHello, type JoinTarget } from "./join-exchange";
import type { Link } from "../transport/link";
import { dial } from "../transport/ws-endpoint";
import { patiently } from "../util/patiently";
import { VERSION } from "../protocol/sdk-version";

export type { JoinTarget } from "./join-exchange";

/** Dials the driver until it answers or the join timeout passes (rank 0 may not listen yet). */
function dialPatiently(target: JoinTarget, maxFrameBytes: number): Promise<Link> {
  const why = (err: unknown): string =>
    isMeshtrainError(err) ? err.summary : err instanceof Error ? err.message : String(err);
  return patiently(
    target.timeoutMs,
    (left) => dial(target.url, { maxFrameBytes, timeoutMs: Math.max(1000, Math.min(left, 60_000)) }),
    {
      waiting: (err, left) =>
        process.stderr.write(
          `meshtrain worker: the driver at ${target.url} does not answer yet (${why(err)}); retrying for up to ${Math.round(left / 1000)} s\n`,
        ),
      // The dial's own hint is about reaching a worker; here the driver is what is missing.
      gaveUp: (err) =>
        new TimeoutError(
          `the driver at ${target.url} did not answer within ${Math.round(target.timeoutMs / 1000)} s (last: ${why(err)})`,
          {
            hint: "start the driver first (join() and fromEnv() print this address while they wait), check the host and port, or raise --join-timeout",
            cause: err,
          },
        ),
    },
  );
}

/**
 * Connects out to the driver, proves the token both ways, says who this worker is and where it
 * listens, and waits for its rank (the driver answers once every expected worker is in). The
 * returned link is the lifeline: it closes when the driver closes the cluster or dies.
 */
export async function joinDriver(
  target: JoinTarget,
  o: { token: string; ownUrl: string; maxFrameBytes: number },
): Promise<{ assigned: JoinAssigned; lifeline: Link }> {
  const who = `the driver at ${target.url}`;
  const link = await dialPatiently(target, o.maxFrameBytes);
  try {
    await offerHandshake(link, { token: o.token, timeoutMs: 10_000, role: "joining", who });
    const assigned = await exchangeHello(
      link,
      {
        version: VERSION,
        url: o.ownUrl,
        pid: process.pid,
        hostname: machineName(),
        node: process.version,
        cpus: os.availableParallelism(),
        memoryBytes: os.totalmem(),
      },
      target,
      who,
    );
    return { assigned, lifeline: link };
  } catch (err) {
    link.terminate();
    throw err;
  }
}
