import * as dgram from "node:dgram";
import * as dns from "node:dns/promises";
import { TimeoutError } from "../errors/errors";
import { patiently } from "../util/patiently";

/**
 * The address of this machine's interface that routes to the driver: a joining worker listens
 * there (not on every interface), and its peers and the driver reach it there. A connected UDP
 * socket asks the kernel's routing table without sending anything.
 */
export async function localAddressTowards(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const host = hostname.replace(/^\[|\]$/g, "");
  const { address, family } = await dns.lookup(host);
  const socket = dgram.createSocket(family === 6 ? "udp6" : "udp4");
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("error", reject);
      socket.connect(Number(port) || 80, address, () => resolve());
    });
    return socket.address().address;
  } finally {
    socket.close();
  }
}

/**
 * localAddressTowards, waiting while the driver's name does not resolve yet: a Kubernetes
 * headless Service has no address until the driver's pod exists, and the workers' pods may start
 * first.
 */
export function addressTowardsDriver(url: string, timeoutMs: number): Promise<string> {
  const host = new URL(url).hostname;
  const code = (err: unknown): string | undefined => (err as NodeJS.ErrnoException).code;
  return patiently(timeoutMs, () => localAddressTowards(url), {
    retryable: (err) => code(err) === "ENOTFOUND" || code(err) === "EAI_AGAIN",
    waiting: (err, left) =>
      process.stderr.write(
        `meshtrain worker: the driver's host ${host} does not resolve yet (${code(err)}); retrying for up to ${Math.round(left / 1000)} s\n`,
      ),
    gaveUp: (err) =>
      new TimeoutError(
        `the driver's host ${host} did not resolve within ${Math.round(timeoutMs / 1000)} s (${code(err)})`,
        {
          hint: "check the name in --join (in Kubernetes: the driver's Service, and that its pod was scheduled), or raise --join-timeout",
          cause: err,
        },
      ),
  });
}
