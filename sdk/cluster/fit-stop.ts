import { AbortError } from "../errors/errors";

/**
 * Why the running fit should stop at its next step boundary, if anyone asked: its AbortSignal,
 * an interrupt (Ctrl-C, a notebook's interrupt button) or cluster.close(). The step loops ask
 * after every step; the first request wins.
 */
export class FitStop {
  private reason: AbortError | undefined;
  private readonly detach: () => void;

  constructor(signal: AbortSignal | undefined) {
    const onAbort = (): void => this.request(`fit aborted by its AbortSignal${signal?.reason !== undefined ? ` (${describe(signal.reason)})` : ""}`);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
    this.detach = () => signal?.removeEventListener("abort", onAbort);
  }

  /** Asks the fit to stop after the step in flight. */
  request(summary: string): void {
    this.reason ??= new AbortError(summary, {
      hint: "the workers finished the steps in flight and are ready: fit again on the same cluster, or resume from a checkpoint written with fit's checkpoint option",
    });
  }

  get requested(): AbortError | undefined {
    return this.reason;
  }

  /** The fit is over: its signal no longer concerns this cluster. */
  dispose(): void {
    this.detach();
  }
}

function describe(reason: unknown): string {
  if (reason instanceof Error) return reason.name === "AbortError" ? "aborted" : reason.message;
  return String(reason);
}
