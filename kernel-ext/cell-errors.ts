import { format } from "node:util";

interface ExecuteReply {
  status: string;
  ename?: string;
  evalue?: string;
  traceback?: string[];
}

type HandlerProto = { handleExecute(this: unknown, ...args: unknown[]): Promise<ExecuteReply> };

/**
 * tslab answers a failed cell with status "error" and nothing else: it prints the error to the
 * cell's stderr, and Jupyter tools that read the reply (nbclient, nbconvert --execute, papermill)
 * report an empty "<Error>". This fills the reply's ename, evalue and traceback from what tslab
 * printed: the thrown error (a MeshtrainError's evalue ends with its "help:" hint) or the
 * TypeScript diagnostics. The cell's own output is unchanged.
 */
export function reportCellErrors(jupyterModule: { JupyterHandlerImpl: { prototype: HandlerProto } }): void {
  let printed: unknown[][] = [];
  const error = console.error.bind(console);
  // tslab's executor prints a failure with console.error, looked up when the kernel starts.
  console.error = (...args: unknown[]): void => {
    printed.push(args);
    error(...args);
  };
  const proto = jupyterModule.JupyterHandlerImpl.prototype;
  const handleExecute = proto.handleExecute;
  proto.handleExecute = async function (this: unknown, ...args: unknown[]): Promise<ExecuteReply> {
    printed = [];
    const reply = await handleExecute.apply(this, args);
    if (reply.status === "error" && reply.ename === undefined && printed.length > 0) Object.assign(reply, describe(printed));
    return reply;
  };
}

function describe(printed: unknown[][]): Required<Pick<ExecuteReply, "ename" | "evalue" | "traceback">> {
  const thrown = printed.map((args) => args[0]).find((x): x is Error => x instanceof Error || (typeof x === "object" && x !== null && "message" in x && "stack" in x));
  if (thrown) {
    return { ename: thrown.name || "Error", evalue: thrown.message, traceback: (thrown.stack ?? `${thrown.name}: ${thrown.message}`).split("\n") };
  }
  // TypeScript diagnostics, one console.error each ("%s%d:%d - %s").
  const lines = printed.map((args) => format(...args));
  return { ename: "TypeScriptError", evalue: lines.join("\n"), traceback: lines };
}
