/** A Jupyter error output: what a front end shows in the cell (the traceback lines, ANSI colours allowed). */
export interface ErrorOutput {
  ename: string;
  evalue: string;
  traceback: string[];
}

const RED = "\u001b[0;31m";
const RESET = "\u001b[0m";

interface ErrorLike {
  name?: unknown;
  message: unknown;
  stack?: unknown;
  cause?: unknown;
  code?: unknown;
  summary?: unknown;
  hint?: unknown;
}

export function isErrorLike(x: unknown): x is ErrorLike {
  return x instanceof Error || (typeof x === "object" && x !== null && "message" in x && "stack" in x);
}

/** tslab's interrupt (a rejected wait) and Node's (a synchronous script stopped by SIGINT). */
function isInterrupt(e: ErrorLike): boolean {
  return e.message === "Interrupted asynchronously" || e.code === "ERR_SCRIPT_EXECUTION_INTERRUPTED";
}

/** A meshtrain error, from whichever copy of the SDK made it: its code, summary and hint say all. */
function isMeshtrain(e: ErrorLike): e is ErrorLike & { code: string; summary: string } {
  return typeof e.code === "string" && e.code.startsWith("MT_ERR_") && typeof e.summary === "string";
}

/** The frames worth showing: the cell's and the user's modules', not Node's or tslab's. */
function userFrames(stack: string): string[] {
  return stack
    .split("\n")
    .filter((l) => /^\s+at /.test(l))
    .filter((l) => !/node:internal|[\\/]tslab[\\/]dist[\\/]|[\\/]node_modules[\\/]/.test(l));
}

function causes(e: ErrorLike): string[] {
  const out: string[] = [];
  const seen = new Set<unknown>([e]);
  for (
    let c = e.cause;
    c !== undefined && c !== null && !seen.has(c) && out.length < 8;
    c = isErrorLike(c) ? c.cause : undefined
  ) {
    seen.add(c);
    out.push(
      isErrorLike(c) ? `caused by ${String(c.name ?? "Error")}: ${String(c.message)}` : `caused by ${String(c)}`,
    );
  }
  return out;
}

/**
 * How a cell's failure reads in the notebook. An interrupt is one line (tslab's stack is about
 * tslab); a meshtrain error is its type, code, statement, hint and causes (its stack is the
 * SDK's, not the user's); anything else is its type, message, the cell's frames and causes.
 */
export function errorOutput(e: ErrorLike): ErrorOutput {
  const name = typeof e.name === "string" && e.name ? e.name : "Error";
  if (isInterrupt(e)) {
    const evalue = "the cell was interrupted; the kernel, its variables and its clusters stay";
    return { ename: "Interrupted", evalue, traceback: [`${RED}Interrupted${RESET}: ${evalue}`] };
  }
  if (isMeshtrain(e)) {
    const hint =
      typeof e.hint === "string" ? e.hint.split("\n").map((l, i) => (i === 0 ? `help: ${l}` : `      ${l}`)) : [];
    return {
      ename: name,
      evalue: String(e.message),
      traceback: [`${RED}${name}${RESET} [${e.code}]: ${e.summary}`, ...hint, ...causes(e)],
    };
  }
  const message = String(e.message);
  const frames = typeof e.stack === "string" ? userFrames(e.stack) : [];
  return { ename: name, evalue: message, traceback: [`${RED}${name}${RESET}: ${message}`, ...frames, ...causes(e)] };
}
