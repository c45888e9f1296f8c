import {
  CollectiveError,
  isMeshtrainError,
  ProtocolError,
  WorkerLostError,
  type MeshtrainError,
} from "../errors/errors";
import type { Link } from "../transport/link";
import { Liveness } from "../transport/liveness";

export interface PeerWatch {
  /** "ring" or "pipeline": what the link carries, for the errors. */
  what: string;
  /** The neighbour, as errors name it. */
  name: string;
  heartbeat: { intervalMs: number; timeoutMs: number };
  /** A binary frame from the neighbour; a throw fails the link with a typed error. */
  onBinary(buf: Buffer): void;
  fail(err: MeshtrainError): void;
}

/**
 * Takes over a link between two workers (ring or pipeline neighbours): binary frames go to
 * onBinary, anything else, a closed link or a silent neighbour is one typed error naming the
 * neighbour. Returns the heartbeat, to stop when the link is closed on purpose.
 */
export function watchPeer(link: Link, o: PeerWatch): Liveness {
  const alive = new Liveness();
  link.setHandlers({
    text: () => o.fail(new ProtocolError(`unexpected text frame on the ${o.what} link with ${o.name}`)),
    binary: (buf) => {
      alive.heard();
      try {
        o.onBinary(buf);
      } catch (err) {
        o.fail(isMeshtrainError(err) ? err : new ProtocolError(String(err)));
      }
    },
    close: (code, reason) =>
      o.fail(
        new CollectiveError(`${o.what} link with ${o.name} closed (code ${code}${reason ? `: ${reason}` : ""})`, {
          details: { peer: o.name },
          hint: "that worker exited or lost its network; the driver's error names the cause",
        }),
      ),
    pong: () => alive.heard(),
  });
  // One interval more than the driver allows, so the driver (which can name the cause and stop
  // everyone) usually notices a frozen worker first.
  alive.start(link, o.heartbeat.intervalMs, o.heartbeat.timeoutMs + o.heartbeat.intervalMs, (ms) =>
    o.fail(new WorkerLostError(`${o.what} neighbour ${o.name} was silent for ${ms} ms`, { details: { peer: o.name } })),
  );
  return alive;
}
