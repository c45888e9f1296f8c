import { RingAllReduce } from "../../sdk/collectives/ring-allreduce";
import { shardBounds, type RingPhases } from "../../sdk/collectives/segments";
import type { HostIO } from "../../sdk/roles/role";
import type { WireFormat } from "../../sdk/protocol/wire-formats";
import { CollectiveError } from "../../sdk/errors/errors";
import { decodeFrame } from "../../sdk/protocol/frame";

/** N ring positions joined in memory; frames are delivered asynchronously, in order, as bytes. */
export function inProcessRing(n: number, chunkElements: number): { rings: RingAllReduce[]; cut(from: number): void } {
  const rings: RingAllReduce[] = [];
  const cutLinks = new Set<number>();
  for (let p = 0; p < n; p++) {
    rings.push(
      new RingAllReduce(
        {
          sendToNext: (header, body) => {
            if (cutLinks.has(p)) return Promise.reject(new Error("link cut"));
            // The bytes are read later, as a socket would: a ring that overwrites a chunk
            // before its send completed would send the wrong data.
            return new Promise((resolve) =>
              setImmediate(() => {
                const frame = Buffer.concat([header, body]);
                resolve();
                setImmediate(() => rings[(p + 1) % n]!.receive(decodeFrame(frame)));
              }),
            );
          },
          prevName: `rank ${(p - 1 + n) % n}`,
          nextName: `rank ${(p + 1) % n}`,
        },
        p,
        n,
        chunkElements,
      ),
    );
  }
  return {
    rings,
    cut(from: number) {
      cutLinks.add(from);
      rings[(from + 1) % n]!.fail(new CollectiveError(`ring link with rank ${from} closed`));
    },
  };
}

/** One ring position's links, as the worker host hands them to a step (host-links.ts): collectives only, in the wire format asked. */
export function ringLinks(ring: RingAllReduce, position: number, size: number): HostIO {
  let seq = 0;
  const run = (phases: RingPhases) => async (data: Float32Array, wire?: WireFormat) => ({ data, stats: await ring.run(data, seq++, 30_000, wire, phases) });
  const none = () => Promise.reject(new Error("no pipeline or servers here"));
  return {
    allReduce: run("both"),
    reduceScatter: run("reduceScatter"),
    allGather: run("allGather"),
    shardOf: (length) => shardBounds(length, size, position),
    overlap: () => null,
    receive: none,
    send: () => undefined,
    servers: { pull: none, push: none },
  };
}
