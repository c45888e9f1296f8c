import { ConfigError } from "../errors/errors";
import type { JoinTarget } from "./join-driver";

/** How a worker process listens and whom it trusts (what `meshtrain worker` takes as flags). */
export interface WorkerOptions {
  /** Interface to bind. Default 127.0.0.1: nothing outside this machine can connect. */
  host: string;
  /** 0 picks a free port. */
  port: number;
  token: string | undefined;
  maxFrameBytes: number;
  /** Exit when the driver's session ends (local workers). Daemons keep serving. */
  exitWithDriver: boolean;
  /** Serve wss:// with this PEM certificate and key. */
  tls?: { cert: Buffer; key: Buffer };
  /** Files to import before serving (custom layers); see modules.ts. */
  modules?: readonly string[];
  /** Join this driver (`--join`) instead of waiting to be reached; exit when it is gone. */
  join?: JoinTarget;
}

export const DEFAULT_WORKER_OPTIONS: Omit<WorkerOptions, "token"> = {
  host: "127.0.0.1",
  port: 7070,
  maxFrameBytes: 64 * 1024 * 1024,
  exitWithDriver: false,
};

function isLoopback(host: string): boolean {
  return host === "127.0.0.1" || host === "::1" || host === "localhost" || host.startsWith("127.");
}

/** Checks that no worker ever listens beyond this machine without a token. */
export function checkWorkerOptions(o: WorkerOptions): void {
  if (o.token === undefined || o.token.length === 0) {
    throw new ConfigError(
      isLoopback(o.host)
        ? "a worker needs the cluster token: every connection must prove it"
        : `refusing to listen on ${o.host} without a token: anyone who reaches it could drive it`,
      {
        hint: "pass --token <secret> or set MESHTRAIN_TOKEN (at least 16 characters); give the same token to the driver with .token(...)",
      },
    );
  }
  if (o.token.length < 16) {
    throw new ConfigError(`the token has ${o.token.length} characters; at least 16 are needed`, {
      hint: "use a long random secret, e.g. `openssl rand -hex 16`",
    });
  }
}
