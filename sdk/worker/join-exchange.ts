import { ProtocolError } from "../errors/errors";
import type { JoinAssigned, JoinHello, RankClaim } from "../protocol/join";
import { fromWireError } from "../protocol/wire-error";
import { readJoinFrame, sendJoinFrame } from "../transport/join-frames";
import type { Link } from "../transport/link";

/** `meshtrain worker --join <url>`: where the driver listens, this worker's rank if its environment says, how long to wait. */
export interface JoinTarget {
  url: string;
  claim: RankClaim | null;
  timeoutMs: number;
}

/**
 * After the handshake: says who this worker is and waits for its rank (the driver answers once
 * every expected worker is in), for a process and a browser tab alike.
 */
export async function exchangeHello(
  link: Link,
  hello: Omit<JoinHello, "type" | "v" | "claim">,
  target: JoinTarget,
  who: string,
): Promise<JoinAssigned> {
  sendJoinFrame(link, { type: "hello", ...hello, claim: target.claim });
  const reply = await readJoinFrame(link, {
    timeoutMs: target.timeoutMs,
    who,
    waitingFor: "a rank (it answers once every expected worker has joined)",
  });
  if (reply.type === "error") throw fromWireError(reply.error, { address: target.url });
  if (reply.type !== "assigned") throw new ProtocolError(`${who} sent "${reply.type}" where a rank belongs`);
  return reply;
}
