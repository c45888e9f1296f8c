import type { MessageOf } from "../../../protocol/messages";
import type { OptimizerSpec } from "../../../protocol/optimizer-spec";
import { aloneIO, profileReplica } from "../../profile-replica";

/**
 * A local-SGD / DiLoCo sync's own work on this model, as a replica does it with no peers: the
 * weights read out, their change since the last sync, the check for non-finite values, the
 * outer optimizer's update of the last sync's weights and the weights set again. On the 11.4M
 * MLP about 40 ms a sync once warmed (a fit's first, allocating its buffers, some 150), which
 * plans that priced only the sync's bytes left out: they predicted every-8 syncing 1.27x faster
 * than it ran over loopback.
 */
export async function timeLocalSync(
  msg: MessageOf<"profile">,
  outer: OptimizerSpec,
  time: (run: () => Promise<void>) => Promise<number>,
): Promise<number> {
  const replica = await profileReplica(msg, { outer });
  try {
    // A sync with no slice before it ("only", as when a fit stops between syncs): the sync's work alone.
    const sync = async (): Promise<void> =>
      void (await replica.step(
        { type: "step", v: msg.v, id: msg.id, step: 0, epoch: 0, weight: 0, sync: "only", attachments: [] },
        [],
        aloneIO,
      ));
    // Once first, whatever the profile's budget: the first sync allocates its buffers (the weights' size each), which a fit pays once.
    await sync();
    return await time(sync);
  } finally {
    replica.dispose();
  }
}
