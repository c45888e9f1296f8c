import type { JoinAssigned } from "../protocol/join";
import { offerHandshake } from "../transport/handshake";
import type { Link } from "../transport/link";
import { dial } from "../transport/ws-endpoint";
import { VERSION } from "../protocol/sdk-version";
import { exchangeHello, type JoinTarget } from "./join-exchange";
import { tabName } from "./browser/tab-name";
import { tabMemoryBytes } from "./browser/backend-choice";

/**
 * join-driver.ts for a browser tab: the same exchange, once (the page was served by the driver,
 * so it is there), saying the tab is reached through the driver's relay.
 */
export async function joinDriver(
  target: JoinTarget,
  o: { token: string; ownUrl: string; maxFrameBytes: number },
): Promise<{ assigned: JoinAssigned; lifeline: Link }> {
  const who = `the driver at ${target.url}`;
  const link = await dial(target.url, { maxFrameBytes: o.maxFrameBytes, timeoutMs: 10_000 });
  try {
    await offerHandshake(link, { token: o.token, timeoutMs: 10_000, role: "joining", who });
    const assigned = await exchangeHello(
      link,
      {
        version: VERSION,
        url: o.ownUrl,
        pid: 0,
        hostname: tabName(),
        node: "browser",
        cpus: navigator.hardwareConcurrency || 1,
        memoryBytes: tabMemoryBytes(),
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
