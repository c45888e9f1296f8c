import { CLOSE } from "../transport/link";
import type { JoinListener } from "./join-listener";
import type { WorkerHandle } from "../members/worker-handle";
import { atMost } from "../util/at-most";

/** Ends the session with every worker and server, and stops listening for joins. */
export async function stopMembers(
  joins: JoinListener | undefined,
  members: readonly WorkerHandle[],
  reason: string,
): Promise<void> {
  await joins?.close();
  await Promise.all(
    members.map(async (h) => {
      h.expectClose();
      if (!h.channel.closed) h.channel.close(CLOSE.normal, reason.slice(0, 100));
      // Local workers exit when their driver's session ends; insist if one does not. A remote
      // one is free for the next driver once the closing handshake is done.
      if (h.process) await h.process.stop(3000);
      else await atMost(h.closed, 2000);
    }),
  );
}
