import { format } from "node:util";
import { cellOf, runningCell } from "./cell-context";
import { errorOutput, isErrorLike } from "./error-output";

interface ExecuteReply {
  status: string;
  ename?: string;
  evalue?: string;
  traceback?: string[];
}

type HandlerProto = { handleExecute(this: unknown, req: unknown, ...rest: unknown[]): Promise<ExecuteReply> };

/** Which part of tslab makes the console.error being made: its executor (a cell's failure), its main (a late failure), or neither (a cell or the SDK). */
function tslabCaller(): "executor" | "main" | null {
  const frames = (new Error().stack ?? "").split("\n");
  // [0] "Error", [1] this function, [2] the console.error below, [3] its caller.
  return (
    (/[\\/]tslab[\\/]dist[\\/](executor|main)\.js/.exec(frames[3] ?? "")?.[1] as "executor" | "main" | undefined) ??
    null
  );
}

/** tslab's process-wide handlers print a rejection no one handled, or an exception thrown from a callback, with these labels. */
const LATE = new Set(["UnhandledPromiseRejection:", "UncaughtException:"]);

/**
 * tslab reports a failed cell by printing it on the cell's stderr (a thrown error as Node's raw
 * dump of all its fields and stack) and answering status "error" with nothing else, so front
 * ends showed a dump and tools that read the reply (nbclient, nbconvert --execute, papermill)
 * an empty "<Error>". Here a thrown failure becomes what a Jupyter user expects: an error output
 * in the cell with its type, message, hint and causes (error-output.ts), and the same ename,
 * evalue and traceback in the reply. TypeScript's diagnostics stay as tslab prints them and
 * fill the reply too. A failure tslab catches after its cell ended (a promise no cell awaited)
 * is an error output in the cell that runs now, where tslab sends late output.
 */
export function reportCellErrors(jupyterModule: { JupyterHandlerImpl: { prototype: HandlerProto } }): void {
  const print = console.error.bind(console);
  // tslab's executor prints a failure with console.error, looked up when it is called.
  console.error = (...args: unknown[]): void => {
    const cell = runningCell();
    const caller = cell ? tslabCaller() : null;
    if (!cell || !caller) return print(...args);
    if (caller === "main") {
      // A failure after its cell ended (a fit started and never awaited): shown in the cell that runs now, as an error output.
      if (args.length !== 2 || !LATE.has(String(args[0])) || !isErrorLike(args[1])) return print(...args);
      const late = errorOutput(args[1]);
      late.traceback.splice(1, 0, "(from a promise no cell awaited, or a callback: it failed after its cell ended)");
      cell.send("error", late);
      return;
    }
    const thrown = args.length === 1 ? args[0] : undefined;
    if (isErrorLike(thrown)) {
      cell.failure = errorOutput(thrown);
      cell.send("error", cell.failure);
      return;
    }
    cell.diagnostics.push(format(...args));
    print(...args);
  };
  const proto = jupyterModule.JupyterHandlerImpl.prototype;
  const handleExecute = proto.handleExecute;
  proto.handleExecute = async function (this: unknown, req: unknown, ...rest: unknown[]): Promise<ExecuteReply> {
    const reply = await handleExecute.call(this, req, ...rest);
    const cell = cellOf(req);
    if (reply.status !== "error" || reply.ename !== undefined || !cell) return reply;
    if (cell.failure) return Object.assign(reply, cell.failure);
    if (cell.diagnostics.length > 0)
      Object.assign(reply, {
        ename: "TypeScriptError",
        evalue: cell.diagnostics.join("\n"),
        traceback: cell.diagnostics,
      });
    return reply;
  };
}
