import { CollectiveError, ProtocolError, type MeshtrainError } from "../errors/errors";
import { decodeFrame } from "../protocol/frame";
import { CLOSE, type Link } from "../transport/link";
import type { AllReducer } from "./all-reducer";
import { watchPeer } from "./peer-watch";
import { RingAllReduce } from "./ring-allreduce";

export interface RingLinks {
  /** The link this position dialled: frames from the previous position arrive on it. */
  fromPrev: Link;
  /** The link the next position dialled: this position sends on it. */
  toNext: Link;
  prevName: string;
  nextName: string;
  position: number;
  size: number;
  chunkElements: number;
  heartbeat: { intervalMs: number; timeoutMs: number };
}

/**
 * Runs a ring all-reduce over two authenticated Links, with heartbeats on both: a closed link,
 * a frame that is not a ring chunk, or a silent neighbour fails the ring with a typed error
 * naming the neighbour.
 */
export function ringOverLinks(o: RingLinks): { ring: AllReducer; close(): void } {
  const ring = new RingAllReduce(
    { sendToNext: (header, body) => o.toNext.sendParts(header, body), prevName: o.prevName, nextName: o.nextName },
    o.position,
    o.size,
    o.chunkElements,
  );
  const close = watchRing(o, ring, (buf) => ring.receive(decodeFrame(buf)));
  // A step's megabytes arrive here: read into kept buffers (the ring copies what it keeps).
  o.fromPrev.lendBinary?.();
  return { ring, close };
}

/**
 * A ring whose bytes travel elsewhere (the native data plane) keeps its WebSocket links for
 * heartbeats alone: a neighbour that dies or goes silent fails it as it would the other ring.
 */
export function watchedRing(o: RingLinks, ring: AllReducer): { ring: AllReducer; close(): void } {
  return {
    ring,
    close: watchRing(o, ring, () => {
      throw new ProtocolError(`a binary frame from ${o.prevName} on a ring link that only carries heartbeats`);
    }),
  };
}

function watchRing(o: RingLinks, ring: AllReducer, fromPrev: (buf: Buffer) => void): () => void {
  const fail = (err: MeshtrainError): void => ring.fail(err);
  const watches = [
    watchPeer(o.fromPrev, { what: "ring", name: o.prevName, heartbeat: o.heartbeat, fail, onBinary: fromPrev }),
    watchPeer(o.toNext, {
      what: "ring",
      name: o.nextName,
      heartbeat: o.heartbeat,
      fail,
      onBinary: () => {
        throw new ProtocolError(`unexpected binary frame from ${o.nextName}`);
      },
    }),
  ];
  return () => {
    for (const w of watches) w.stop();
    o.fromPrev.close(CLOSE.normal, "session over");
    o.toNext.close(CLOSE.normal, "session over");
    ring.fail(new CollectiveError("the ring was closed"));
  };
}
