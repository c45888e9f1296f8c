import { isMeshtrainError } from "../../errors/errors";
import { CommServer } from "./listener";
import { log, onCompute, toCompute } from "./thread";

/**
 * The communication thread of a worker: owns the listening socket, authenticates every
 * connection, validates every frame, runs the ring all-reduce with its neighbours, and keeps
 * answering heartbeats while the compute thread is busy. It serves one driver at a time.
 */
const server = new CommServer();
onCompute((m) => server.handle(m));
server.start().catch((err: unknown) => {
  log(isMeshtrainError(err) ? err.message : String(err));
  toCompute({ kind: "exit", code: 2, reason: isMeshtrainError(err) ? err.summary : String(err) });
});
