import type { WorkerHandle } from "../cluster/worker-handle";

export interface StallWatchOptions {
  stallMs: number;
  stepMs: number;
  heartbeatTimeoutMs: number;
  /** The fit's workers and servers now (elastic membership changes). */
  members(): readonly WorkerHandle[];
  /** The step the fit is at, if any. */
  step(): number | undefined;
  print(report: string): void;
}

/**
 * Notices a fit that stops making progress long before its step timeout: when no step has
 * finished for `stallMs`, it prints which operation is waiting, which ranks have arrived at it
 * and which have not, and what each one last reported (its action, and when it was last heard
 * from). It prints again at twice, four times... the threshold while the stall lasts; the
 * report is also what a step timeout's error carries.
 */
export class StallWatch {
  private last = performance.now();
  private nextAt: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: StallWatchOptions) {
    this.nextAt = o.stallMs;
  }

  start(): void {
    this.last = performance.now();
    this.timer = setInterval(() => this.check(), Math.min(1000, Math.max(50, this.o.stallMs / 4)));
    this.timer.unref();
  }

  /** A step (or async round) finished. */
  progressed(): void {
    this.last = performance.now();
    this.nextAt = this.o.stallMs;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private check(): void {
    if (performance.now() - this.last < this.nextAt) return;
    this.nextAt *= 2;
    this.o.print(this.report());
  }

  /** Who waits for whom, now. */
  report(): string {
    const now = performance.now();
    const step = this.o.step();
    const members = this.o.members();
    const workers = members.filter((h) => h.role === "worker" && !h.lost);
    // Arrived: waiting on the others. A worker between steps has not arrived at the step the fit waits for.
    const arrived = workers.filter((h) => h.progress?.waiting);
    const missing = workers.filter((h) => !arrived.includes(h));
    const op = mostCommon(arrived.map((h) => h.progress!.action)) ?? (step !== undefined ? `step ${step}` : "the next step");
    const lines = [
      `meshtrain: stalled: no step has finished for ${secs(now - this.last)}${step !== undefined ? ` (at step ${step})` : ""}; a report comes after ${secs(this.o.stallMs)} without progress, the step times out after ${secs(this.o.stepMs)}`,
      `  waiting: ${op}`,
      `  arrived: ${arrived.map((h) => h.label).join(", ") || "none"}`,
      `  missing: ${missing.map((h) => h.label).join(", ") || "none"}`,
      ...members.map((h) => `  ${h.label}: ${describe(h, now, this.o.heartbeatTimeoutMs)}`),
    ];
    return lines.join("\n");
  }
}

function describe(h: WorkerHandle, now: number, heartbeatTimeoutMs: number): string {
  if (h.lost) return `lost (${h.lost.summary})`;
  const p = h.progress;
  const doing = p ? `${p.waiting ? "waiting for " : ""}${p.action} for ${secs(now - p.since)}${p.detail ? ` (${p.detail})` : ""}` : "no progress reported yet";
  const silent = h.channel.silentForMs();
  const heard = `last heard from ${secs(silent)} ago${silent > 2 * 1000 ? ` (lost after ${secs(heartbeatTimeoutMs)} of silence)` : ""}`;
  return `${doing}; ${heard}`;
}

function mostCommon(xs: readonly string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const x of xs) counts.set(x, (counts.get(x) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}
