import { StateError } from "../errors/errors";
import type { MessageOf } from "../protocol/messages";
import type { OptimizerSpec } from "../protocol/optimizer-spec";
import { DataReplica } from "./data/replica";
import type { HostIO } from "./role";

const ALONE = { waitMs: 0, commMs: 0, bytesSent: 0 };

/** A sum over a ring of one: the buffer as it is. */
export const aloneSum = (data: Float32Array): Promise<{ data: Float32Array; stats: typeof ALONE }> =>
  Promise.resolve({ data, stats: ALONE });

/** The links of a replica with no peers: each collective gives its buffer back as it is. */
export const aloneIO: HostIO = {
  allReduce: aloneSum,
  reduceScatter: aloneSum,
  allGather: aloneSum,
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

/** A data-parallel replica of the profile's model, with its initializers' weights, as a fit would load it (`localSgd`: syncing with this outer optimizer). */
export function profileReplica(msg: MessageOf<"profile">, localSgd?: { outer: OptimizerSpec }): Promise<DataReplica> {
  return DataReplica.load(
    {
      type: "load",
      v: msg.v,
      id: msg.id,
      role: "replica",
      topology: msg.topology,
      optimizer: msg.optimizer,
      loss: msg.loss,
      ...(msg.heads ? { heads: msg.heads } : {}),
      replicaBatch: Math.max(...msg.batches),
      stepTimeoutMs: 60_000,
      attachments: [],
      ...(localSgd ? { sum: { kind: "local" as const, outer: localSgd.outer } } : {}),
    },
    "initial",
  );
}
