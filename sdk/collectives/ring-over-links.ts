import { CollectiveError, isMeshtrainError, ProtocolError, WorkerLostError } from "../errors/errors";
import { decodeFrame } from "../protocol/frame";
import { CLOSE, type Link } from "../transport/link";
import { Liveness } from "../transport/liveness";
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
export function ringOverLinks(o: RingLinks): { ring: RingAllReduce; close(): void } {
  const ring = new RingAllReduce(
    { sendToNext: (header, body) => o.toNext.sendParts(header, body), prevName: o.prevName, nextName: o.nextName },
    o.position,
    o.size,
    o.chunkElements,
  );
  const watches: Liveness[] = [];
  const watch = (link: Link, name: string, onBinary: (buf: Buffer) => void): void => {
    const alive = new Liveness();
    watches.push(alive);
    link.setHandlers({
      text: () => ring.fail(new ProtocolError(`unexpected text frame on the ring link with ${name}`)),
      binary: (buf) => {
        alive.heard();
        onBinary(buf);
      },
      close: (code, reason) =>
        ring.fail(
          new CollectiveError(`ring link with ${name} closed (code ${code}${reason ? `: ${reason}` : ""})`, {
            details: { peer: name },
            hint: "that worker exited or lost its network; the driver's error names the cause",
          }),
        ),
      pong: () => alive.heard(),
    });
    // One interval more than the driver allows, so the driver (which can name the cause and
    // stop everyone) usually notices a frozen worker first.
    alive.start(link, o.heartbeat.intervalMs, o.heartbeat.timeoutMs + o.heartbeat.intervalMs, (ms) =>
      ring.fail(new WorkerLostError(`ring neighbour ${name} was silent for ${ms} ms`, { details: { peer: name } })),
    );
  };
  watch(o.fromPrev, o.prevName, (buf) => {
    try {
      ring.receive(decodeFrame(buf));
    } catch (err) {
      ring.fail(isMeshtrainError(err) ? err : new ProtocolError(String(err)));
    }
  });
  watch(o.toNext, o.nextName, () => ring.fail(new ProtocolError(`unexpected binary frame from ${o.nextName}`)));
  return {
    ring,
    close: () => {
      for (const w of watches) w.stop();
      o.fromPrev.close(CLOSE.normal, "session over");
      o.toNext.close(CLOSE.normal, "session over");
      ring.fail(new CollectiveError("the ring was closed"));
    },
  };
}
