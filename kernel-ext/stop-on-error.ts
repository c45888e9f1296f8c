interface ExecuteRequest {
  code: string;
  stop_on_error?: boolean;
}

interface ExecuteReply {
  status: string;
  execution_count?: number;
}

interface Handler {
  execQueue: { add<T>(fn: () => Promise<T>): Promise<T> };
  handleExecuteImpl(req: ExecuteRequest, ...rest: unknown[]): Promise<{ count: number }>;
}

type HandlerProto = { handleExecute(this: Handler, req: ExecuteRequest, ...rest: unknown[]): Promise<ExecuteReply> };

/**
 * Jupyter's execute requests say whether a failure stops the cells queued after it
 * (`stop_on_error`, false for a cell expected to raise: nbclient sends false for cells tagged
 * `raises-exception` and under allow_errors). tslab ignores it: after any failed or interrupted
 * cell it aborts every request that arrives within 200 ms, so the next cells came back with
 * status "abort", no output, and were reported as run. For a request that does not stop on
 * error, this runs the cell in tslab's queue without letting its failure cancel the others:
 * the reply is the same error, and the next cells run. Requests that stop on error keep tslab's
 * behaviour, which is ipykernel's.
 */
export function honourStopOnError(jupyterModule: { JupyterHandlerImpl: { prototype: HandlerProto } }): void {
  const proto = jupyterModule.JupyterHandlerImpl.prototype;
  const stopping = proto.handleExecute;
  proto.handleExecute = async function (this: Handler, req: ExecuteRequest, ...rest: unknown[]): Promise<ExecuteReply> {
    if (req.stop_on_error !== false) return stopping.call(this, req, ...rest);
    // The task resolves whatever the cell did, so the queue is never left rejected (which cancels what follows).
    const outcome = await this.execQueue.add(() =>
      this.handleExecuteImpl(req, ...rest).then(
        (count) => ({ ok: true as const, count }),
        (failed: unknown) => ({ ok: false as const, failed }),
      ),
    );
    if (outcome.ok) return { status: "ok", execution_count: outcome.count.count };
    const count = (outcome.failed as { count?: unknown }).count;
    if (typeof count !== "number") console.error("unexpected error:", outcome.failed);
    return { status: "error", ...(typeof count === "number" ? { execution_count: count } : {}) };
  };
}
