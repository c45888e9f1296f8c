import type { Worker } from "node:worker_threads";
import { LineSplitter } from "../util/lines";
import type { CommToCompute, ComputeToComm } from "./bridge";

type Stream = "stdout" | "stderr";

/**
 * A worker started elsewhere has no pipe to the driver: what this process writes to stdout and
 * stderr (console.log in a custom layer, TF.js warnings, the communication thread's own lines)
 * still goes to its terminal, and is also posted, line by line, to the communication thread,
 * which sends it to the driver. Native code writing to file descriptors 1 and 2 directly is
 * not seen here: it stays on the worker's terminal.
 */
export function captureOutput(comm: Worker): void {
  for (const stream of ["stdout", "stderr"] as const) {
    const target = process[stream];
    const original = target.write.bind(target) as (chunk: unknown, ...rest: unknown[]) => boolean;
    const splitter = new LineSplitter();
    target.write = ((chunk: unknown, ...rest: unknown[]): boolean => {
      const text =
        typeof chunk === "string"
          ? chunk
          : Buffer.isBuffer(chunk) || chunk instanceof Uint8Array
            ? Buffer.from(chunk).toString("utf8")
            : String(chunk);
      const lines = splitter.push(text);
      if (lines.length > 0) post(comm, { kind: "output", stream: stream as Stream, lines });
      return original(chunk, ...rest);
    }) as typeof target.write;
  }
}

function post(comm: Worker, m: ComputeToComm): void {
  comm.postMessage(m);
}

/**
 * An uncaught exception on a worker started elsewhere: its stack is written (and so sent to the
 * driver) and the communication thread is given up to a second to send it before the process
 * exits with code 70. Without this the driver would only learn that the worker was lost.
 */
export function reportCrashes(comm: Worker): void {
  const crash = (err: unknown): void => {
    const text = err instanceof Error ? (err.stack ?? `${err.name}: ${err.message}`) : `uncaught: ${String(err)}`;
    process.stderr.write(`meshtrain worker ${process.pid} crashed: ${text}\n`);
    const exit = (): never => process.exit(70);
    const timer = setTimeout(exit, 1000);
    comm.on("message", (m: CommToCompute) => {
      if (m.kind !== "outputFlushed") return;
      clearTimeout(timer);
      exit();
    });
    post(comm, { kind: "flushOutput" });
  };
  process.on("uncaughtException", crash);
}
