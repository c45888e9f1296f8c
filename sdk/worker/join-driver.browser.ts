import { ProtocolError } from "../errors/errors";
import type { JoinAssigned } from "../protocol/join";
import { fromWireError } from "../protocol/wire-error";
import { offerHandshake } from "../transport/handshake";
import { readJoinFrame, sendJoinFrame } from "../transport/join-frames";
import type { Link } from "../transport/link";
import { dial } from "../transport/ws-endpoint";
import { VERSION } from "../protocol/sdk-version";
import type { JoinTarget } from "./join-driver";
import { tabName } from "./browser/tab-name";
import { tabMemoryBytes } from "./browser/backend-choice";

/**
 * join-driver.ts for a browser tab: the same exchange, once (the page was served by the driver,
 * so it is there), saying the tab is reached through the driver's relay.
 */
export async function joinDriver(target: JoinTarget, o: { token: string; ownUrl: string; maxFrameBytes: number }): Promise<{ assigned: JoinAssigned; lifeline: Link }> {
  const who = `the driver at ${target.url}`;
  const link = await dial(target.url, { maxFrameBytes: o.maxFrameBytes, timeoutMs: 10_000 });
  try {
    await offerHandshake(link, { token: o.token, timeoutMs: 10_000, role: "joining", who });
    sendJoinFrame(link, {
      type: "hello",
      version: VERSION,
      url: o.ownUrl,
      pid: 0,
      hostname: tabName(),
      node: "browser",
      cpus: navigator.hardwareConcurrency || 1,
      memoryBytes: tabMemoryBytes(),
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
