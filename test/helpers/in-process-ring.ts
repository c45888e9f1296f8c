import { RingAllReduce } from "../../sdk/collectives/ring-allreduce";
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
