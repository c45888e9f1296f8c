import * as path from "node:path";
import { isMeshtrainError } from "../errors/errors";
import { checkWorkerOptions, type WorkerOptions } from "./options";
export { checkWorkerOptions, DEFAULT_WORKER_OPTIONS, type WorkerOptions } from "./options";
import { VERSION } from "../protocol/sdk-version";
import type { CommConfig, CommToCompute } from "./bridge";
import type { ComputeHost } from "./host";
import { loadModules } from "../model/modules";
import { captureOutput, reportCrashes } from "./output-capture";
import { joinDriver, type JoinTarget } from "./join-driver";
import { CLOSE } from "../transport/link";
import { startCommThread } from "./comm-thread";
import type { Worker } from "node:worker_threads";

/** How a worker process listens and whom it trusts (what `meshtrain worker` takes as flags). */
/**
 * Runs a worker in this process: TF.js computes on this (main) thread, and a communication
 * thread owns the sockets so that heartbeats are answered during long steps.
 *
 * The communication thread starts first and loads its modules while this thread loads TF.js,
 * the roles and the user's modules: one after the other, a local worker took 750 ms to listen,
 * 470 of them this thread's loading and 260 the other's after it. What that thread says before
 * this one is ready (that it listens, a driver's first message) waits for it, in order, so the
 * worker is announced only once it can compute, and a module that fails to load fails it first.
 */
export async function runWorker(o: WorkerOptions): Promise<number> {
  checkWorkerOptions(o);
  const comm = startCommThread(path.join(__dirname, "comm", "entry.js"), { workerData: commConfig(o) });
  // A local worker's output reaches the driver through its pipes, native writes included.
  if (!o.exitWithDriver) {
    captureOutput(comm);
    reportCrashes(comm);
  }
  return new Promise((resolve, reject) => {
    let compute: ComputeHost | null = null;
    const early: CommToCompute[] = [];
    const finish = (code: number): void => {
      void comm.terminate().finally(() => resolve(code));
    };
    const handle = (m: CommToCompute): void => {
      if (m.kind === "listening") {
        if (o.join) joinThenWatch(o, o.join, m.url, finish);
        // A local worker's address goes to its driver alone: the line would be noise in the driver's output.
        else if (!o.exitWithDriver)
          process.stdout.write(`meshtrain worker ${VERSION} listening on ${m.url} (pid ${process.pid})\n`);
        process.send?.({ type: "listening", url: m.url, port: m.port });
      } else if (m.kind === "exit") {
        // The driver's error names this process's exit; this line says why it chose to.
        if (m.said) process.stderr.write(`meshtrain worker: ${m.reason}; exiting\n`);
        finish(m.code);
        return;
      }
      compute!.handle(m);
    };
    comm.on("message", (m: CommToCompute) => (compute ? handle(m) : early.push(m)));
    loadCompute(comm, o.modules ?? []).then(
      (c) => {
        compute = c;
        for (const m of early.splice(0)) handle(m);
      },
      (err: unknown) => void comm.terminate().finally(() => reject(err)),
    );
    comm.on("error", (err) => {
      process.stderr.write(
        `[meshtrain worker ${process.pid}] communication thread failed: ${err.stack ?? err.message}\n`,
      );
      resolve(70);
    });
    // A local worker lives only as long as the driver that started it.
    process.on("disconnect", () => finish(0));
    // Ctrl-C in a terminal and a notebook's interrupt reach the driver's whole process group:
    // the driver decides (stop the fit at a step boundary, or close the cluster), not this process.
    if (o.exitWithDriver) process.on("SIGINT", () => undefined);
  });
}

/** What the communication thread is told: where to listen, whom to trust, when to end. */
function commConfig(o: WorkerOptions): CommConfig {
  return {
    host: o.host,
    port: o.port,
    token: o.token!,
    maxFrameBytes: o.maxFrameBytes,
    maxConnections: 256,
    handshakeTimeoutMs: 10_000,
    // A joined worker ends when its lifeline to the driver closes (joinThenWatch), with 0 for a
    // close and 1 for a driver that vanished; its session ending too must not race that with a 0.
    exitWithDriver: o.exitWithDriver && o.join === undefined,
    version: VERSION,
    ...(o.tls ? { tls: { cert: o.tls.cert.toString("utf8"), key: o.tls.key.toString("utf8") } } : {}),
  };
}

/** The compute side: TF.js and the roles (loaded here, not at the top: the communication thread starts first), then the user's modules. */
async function loadCompute(comm: Worker, modules: readonly string[]): Promise<ComputeHost> {
  const [{ ROLES }, { ComputeHost }] = await Promise.all([import("../roles/role-table"), import("./host")]);
  loadModules(modules);
  return new ComputeHost(comm, ROLES);
}

/** Joins the driver once listening; the worker exits when its lifeline closes (0 if the driver closed it, 1 if it vanished). */
function joinThenWatch(o: WorkerOptions, target: JoinTarget, ownUrl: string, finish: (code: number) => void): void {
  joinDriver(target, { token: o.token!, ownUrl, maxFrameBytes: o.maxFrameBytes }).then(
    ({ assigned, lifeline }) => {
      process.stdout.write(
        `meshtrain worker ${VERSION} joined ${target.url} as rank ${assigned.rank} of ${assigned.worldSize} (listening on ${ownUrl}, pid ${process.pid})\n`,
      );
      lifeline.setHandlers({
        text: () => undefined,
        binary: () => undefined,
        pong: () => undefined,
        close: (code, reason) => {
          const clean = code === CLOSE.normal;
          if (!clean)
            process.stderr.write(
              `meshtrain worker: the driver at ${target.url} went away (code ${code}${reason ? `, ${reason}` : ""}); exiting\n`,
            );
          finish(clean ? 0 : 1);
        },
      });
    },
    (err: unknown) => {
      // meshtrain's errors carry their hint in the message.
      process.stderr.write(
        `meshtrain worker: could not join ${target.url}: ${isMeshtrainError(err) ? `${err.message} [${err.code}]` : err instanceof Error ? err.message : String(err)}\n`,
      );
      finish(3);
    },
  );
}
