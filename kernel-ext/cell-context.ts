import { createHash } from "node:crypto";
import { CURRENT_CELL } from "../sdk/cluster/cell-origin";

/** What the kernel may send for the cell it runs: any iopub message (an error output, say). */
export type CellSender = (msgType: string, content: object) => void;

interface ZmqMessage {
  metadata?: Record<string, unknown>;
  content: object;
  createReply(): { header: { msg_type: string }; content: object; signAndSend(key: string, socket: unknown): void };
}
interface ZmqServer {
  connInfo: { key: string };
  iopub: unknown;
}
interface ExecuteRequest {
  code: string;
}
type ServerProto = { handleExecute(this: ZmqServer, socket: unknown, msg: ZmqMessage): Promise<void> };
type HandlerProto = { handleExecuteImpl(this: unknown, req: ExecuteRequest, ...rest: unknown[]): Promise<unknown> };

/** One execute request's cell: how to send it outputs, and how it failed (for the reply). */
export interface CellRun {
  send: CellSender;
  /** The cell's identity for the SDK (cell-origin.ts). */
  cell: string;
  /** The error output sent for its failure, if it failed by throwing. */
  failure?: { ename: string; evalue: string; traceback: string[] };
  /** TypeScript's diagnostics, if it failed to compile. */
  diagnostics: string[];
}

/** Rides on each execute request from arrival (when its message is at hand) to execution and reply. */
const RUN = Symbol("meshtrain.cellRun");
let running: CellRun | undefined;

/** The cell that runs now (tslab runs one at a time), if any. */
export function runningCell(): CellRun | undefined {
  return running;
}

/** The cell of an execute request, once it arrived through the kernel's socket. */
export function cellOf(req: unknown): CellRun | undefined {
  return typeof req === "object" && req !== null ? (req as { [RUN]?: CellRun })[RUN] : undefined;
}

/**
 * Before each cell runs: remembers how to send its outputs, and tells the SDK which cell it is
 * (cell-origin.ts) by the id the front end sends in the request's metadata (JupyterLab and
 * Notebook 7 send `cellId`), else by a hash of its code (nbclient, nbconvert and papermill send
 * no id: the same code re-run is the same cell).
 */
export function trackCells(jupyterModule: {
  ZmqServer: { prototype: ServerProto };
  JupyterHandlerImpl: { prototype: HandlerProto };
}): void {
  const server = jupyterModule.ZmqServer.prototype;
  const arrive = server.handleExecute;
  server.handleExecute = function (this: ZmqServer, socket: unknown, msg: ZmqMessage): Promise<void> {
    const send: CellSender = (msgType, content) => {
      const out = msg.createReply();
      out.header.msg_type = msgType;
      out.content = content;
      out.signAndSend(this.connInfo.key, this.iopub);
    };
    const id = msg.metadata?.cellId;
    const code = (msg.content as Partial<ExecuteRequest>).code ?? "";
    const cell =
      typeof id === "string" && id.length > 0
        ? `id:${id}`
        : `code:${createHash("sha256").update(code).digest("hex").slice(0, 16)}`;
    const run: CellRun = { send, cell, diagnostics: [] };
    Object.defineProperty(msg.content, RUN, { value: run });
    return arrive.call(this, socket, msg);
  };
  const handler = jupyterModule.JupyterHandlerImpl.prototype;
  const execute = handler.handleExecuteImpl;
  handler.handleExecuteImpl = function (this: unknown, req: ExecuteRequest, ...rest: unknown[]): Promise<unknown> {
    running = cellOf(req);
    if (running) (globalThis as Record<symbol, unknown>)[CURRENT_CELL] = running.cell;
    return execute.call(this, req, ...rest);
  };
}
