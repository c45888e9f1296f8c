import { ConfigError, StateError, type MeshtrainError } from "../errors/errors";
import type { LocalWorkerProcess } from "../members/local-process";
import type { WorkerHandle } from "../members/worker-handle";

/** Where a cluster is in its life: ready, fitting, failed (lost a worker), closed. */
export type ClusterState = "ready" | "fitting" | "failed" | "closed";

/** Refuses a fit (or add) on a cluster that cannot take one, saying why and what to do. */
export function refuseUnusable(
  what: string,
  c: {
    state: ClusterState;
    failure: MeshtrainError | undefined;
    joined: number;
    departed: ReadonlyMap<number, MeshtrainError>;
  },
): void {
  if (c.state === "closed") {
    throw new StateError(`cannot ${what}: the cluster is closed`, {
      hint: "launch a new cluster with cluster()...launch()",
    });
  }
  if (c.state === "failed") {
    throw new StateError(`cannot ${what}: the cluster stopped after an error: ${c.failure?.summary ?? "unknown"}`, {
      hint: "launch a new cluster with cluster()...launch()",
      cause: c.failure,
    });
  }
  if (c.state === "fitting") {
    throw new StateError(`cannot ${what}: a fit is already running on this cluster`, {
      hint: "await the running fit first",
    });
  }
  if (c.joined > 0 && c.departed.size === 0) {
    throw new StateError(
      `cannot ${what}: workers joined during an earlier elastic fit, so this cluster is no longer the one that was launched`,
      {
        hint: "launch a new cluster with cluster()...launch() for the next fit",
      },
    );
  }
  if (c.departed.size > 0) {
    const ranks = [...c.departed.keys()].join(", ");
    throw new StateError(
      `cannot ${what}: worker rank(s) ${ranks} left during an earlier fit, which finished without them`,
      {
        hint: "launch a new cluster with cluster()...launch() to train with every worker again",
        cause: [...c.departed.values()][0],
      },
    );
  }
}

/** Why add() cannot join a worker (to `url`, or a new local one) to this cluster now, if it cannot. */
export function refuseAdd(c: { elasticFit: boolean; remote: boolean }, url: string | undefined): MeshtrainError | null {
  if (!c.elasticFit) {
    return new StateError("add() joins a worker to a running elastic fit; none is running", {
      hint: 'call it while fit() runs with strategy("data", { elastic: { minWorkers } }), e.g. from onStep',
    });
  }
  if (url === undefined && c.remote) {
    return new ConfigError(
      "add() without an address starts a local worker (or, after join(), takes the next that joins), but this cluster's workers run elsewhere",
      { hint: 'pass the new worker\'s address: add("ws://host:7070")' },
    );
  }
  return null;
}

/** Worker `rank`'s local process, for a method (`what`) that acts on it; refused for a rank that does not exist or runs elsewhere. */
export function localProcessOf(handles: readonly WorkerHandle[], rank: number, what: string): LocalWorkerProcess {
  const h = handles[rank];
  if (!h) throw new ConfigError(`${what}(${rank}): the cluster has worker ranks 0 to ${handles.length - 1}`);
  if (!h.process) {
    throw new ConfigError(
      `${what}(${rank}): worker rank ${rank} (${h.address}) runs elsewhere; ${what}() stops only workers this cluster started`,
      {
        hint: "stop the remote worker on its own host",
      },
    );
  }
  return h.process;
}
