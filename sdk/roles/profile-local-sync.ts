import { StateError } from "../errors/errors";
import type { MessageOf } from "../protocol/messages";
import type { OptimizerSpec } from "../protocol/optimizer-spec";
import { DataReplica } from "./data/replica";
import type { HostIO } from "./role";

const ALONE = { waitMs: 0, commMs: 0, bytesSent: 0 };

/** The links of a replica with no peers: each collective gives its buffer back as it is. */
const aloneIO: HostIO = {
  allReduce: (data) => Promise.resolve({ data, stats: ALONE }),
  reduceScatter: (data) => Promise.resolve({ data, stats: ALONE }),
  allGather: (data) => Promise.resolve({ data, stats: ALONE }),
  shardOf: (length) => [0, length],
  overlap: () => null,
  receive: () => Promise.reject(new StateError("a profile's replica has no pipeline neighbours")),
  send: () => {
    throw new StateError("a profile's replica has no pipeline neighbours");
  },
  servers: {
    pull: () => Promise.reject(new StateError("a profile's replica has no parameter servers")),
    push: () => Promise.reject(new StateError("a profile's replica has no parameter servers")),
  },
};

/**
 * A local-SGD / DiLoCo sync's own work on this model, as a replica does it with no peers: the
 * weights read out, their change since the last sync, the check for non-finite values, the
 * outer optimizer's update of the last sync's weights and the weights set again. On the 11.4M
 * MLP about 40 ms a sync once warmed (a fit's first, allocating its buffers, some 150), which
 * plans that priced only the sync's bytes left out: they predicted every-8 syncing 1.27x faster
 * than it ran over loopback.
 */
export async function timeLocalSync(msg: MessageOf<"profile">, outer: OptimizerSpec, time: (run: () => Promise<void>) => Promise<number>): Promise<number> {
  const replica = await DataReplica.load({ type: "load", v: msg.v, id: msg.id, role: "replica", topology: msg.topology, optimizer: msg.optimizer, loss: msg.loss, ...(msg.heads ? { heads: msg.heads } : {}), replicaBatch: Math.max(...msg.batches), stepTimeoutMs: 60_000, attachments: [], localSgd: { outer } }, "initial");
  try {
    // A sync with no slice before it ("only", as when a fit stops between syncs): the sync's work alone.
    const sync = async (): Promise<void> => void (await replica.step({ type: "step", v: msg.v, id: msg.id, step: 0, epoch: 0, weight: 0, sync: "only", attachments: [] }, [], aloneIO));
    // Once first, whatever the profile's budget: the first sync allocates its buffers (the weights' size each), which a fit pays once.
    await sync();
    return await time(sync);
  } finally {
    replica.dispose();
  }
}
