import * as net from "node:net";
import type { PreflightReport } from "../launchers/preflight-report";
import { VERSION } from "../protocol/sdk-version";

/** `meshtrain preflight --reach ws://driver:port` on a host: versions, and a TCP connection back to the driver. */
export async function runPreflight(reach: string): Promise<PreflightReport> {
  let problem: string | null = null;
  try {
    const { hostname, port } = new URL(reach);
    problem = await new Promise<string | null>((resolve) => {
      const socket = net.connect({ host: hostname.replace(/^\[|\]$/g, ""), port: Number(port) });
      const timer = setTimeout(() => finish("no answer within 5 s"), 5000);
      const finish = (p: string | null): void => {
        clearTimeout(timer);
        socket.destroy();
        resolve(p);
      };
      socket.once("connect", () => finish(null));
      socket.once("error", (err: NodeJS.ErrnoException) => finish(err.code ?? err.message));
    });
  } catch (err) {
    problem = `not an address: ${reach}`;
  }
  return { meshtrain: VERSION, node: process.version, reach: problem };
}
