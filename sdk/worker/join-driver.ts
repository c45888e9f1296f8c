import * as dgram from "node:dgram";
import * as dns from "node:dns/promises";
import * as os from "node:os";
import { ProtocolError } from "../errors/errors";
import type { JoinAssigned, RankClaim } from "../protocol/join";
import { fromWireError } from "../protocol/wire-error";
import { offerHandshake } from "../transport/handshake";
import { readJoinFrame, sendJoinFrame } from "../transport/join-frames";
import type { Link } from "../transport/link";
import { dial } from "../transport/ws-endpoint";
import { VERSION } from "../version";

/** `meshtrain worker --join <url>`: where the driver listens, this worker's rank if its environment says, how long to wait. */
export interface JoinTarget {
  url: string;
  claim: RankClaim | null;
  timeoutMs: number;
}

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
 * Dials the driver until it answers or the join timeout passes: processes a launcher starts
 * together (srun, torchrun-style scripts) may reach rank 0 before it listens, as torchrun's
 * agents retry their rendezvous. Said once on stderr, so a wrong address is visible early.
 */
async function dialPatiently(target: JoinTarget, maxFrameBytes: number): Promise<Link> {
  const deadline = Date.now() + target.timeoutMs;
  let pause = 200;
  let told = false;
  for (;;) {
    try {
      return await dial(target.url, { maxFrameBytes, timeoutMs: Math.max(1000, Math.min(deadline - Date.now(), 60_000)) });
    } catch (err) {
      const left = deadline - Date.now();
      if (left <= pause) throw err;
      if (!told) process.stderr.write(`meshtrain worker: the driver at ${target.url} does not answer yet (${err instanceof Error ? err.message : String(err)}); retrying for up to ${Math.round(left / 1000)} s\n`);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 2000);
    }
  }
}

/**
 * Connects out to the driver, proves the token both ways, says who this worker is and where it
 * listens, and waits for its rank (the driver answers once every expected worker is in). The
 * returned link is the lifeline: it closes when the driver closes the cluster or dies.
 */
export async function joinDriver(target: JoinTarget, o: { token: string; ownUrl: string; maxFrameBytes: number }): Promise<{ assigned: JoinAssigned; lifeline: Link }> {
  const who = `the driver at ${target.url}`;
  const link = await dialPatiently(target, o.maxFrameBytes);
  try {
    await offerHandshake(link, { token: o.token, timeoutMs: 10_000, role: "joining", who });
    sendJoinFrame(link, {
      type: "hello",
      version: VERSION,
      url: o.ownUrl,
      pid: process.pid,
      hostname: os.hostname(),
      node: process.version,
      cpus: os.availableParallelism(),
      memoryBytes: os.totalmem(),
      claim: target.claim,
    });
    const reply = await readJoinFrame(link, { timeoutMs: target.timeoutMs, who, waitingFor: "a rank (it answers once every expected worker has joined)" });
    if (reply.type === "error") throw fromWireError(reply.error, { address: target.url });
    if (reply.type !== "assigned") throw new ProtocolError(`${who} sent "${reply.type}" where a rank belongs`);
    return { assigned: reply, lifeline: link };
  } catch (err) {
    link.terminate();
    throw err;
  }
}
