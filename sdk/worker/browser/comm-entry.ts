import { isMeshtrainError } from "../../errors/errors";
import type { CommConfig } from "../bridge";
import { CommServer } from "../comm/listener";
import { config, log, onCompute, toCompute } from "../comm/thread";

/**
 * A tab's communication thread (a Web Worker): the same server as a Node worker's, listening
 * through the driver's relay. The page sends its configuration first.
 */
self.addEventListener(
  "message",
  (e: MessageEvent) => {
    const m = e.data as { kind: string; config?: CommConfig };
    if (m.kind !== "config" || !m.config) return;
    Object.assign(config, m.config);
    const server = new CommServer();
    onCompute((c) => server.handle(c));
    server.start().catch((err: unknown) => {
      log(isMeshtrainError(err) ? err.message : String(err));
      toCompute({ kind: "exit", code: 2, reason: isMeshtrainError(err) ? err.summary : String(err) });
    });
  },
  { once: true },
);
