import type { WorkerHandle } from "../members/worker-handle";

export interface StallWatchOptions {
  stallMs: number;
  stepMs: number;
  heartbeatIntervalMs: number;
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
  /** The report of the last check while stalled: what a timeout's error carries (by then the ranks that timed out have moved on). */
  private latest: string | undefined;

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
    this.latest = undefined;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private check(): void {
    const stalledFor = performance.now() - this.last;
    if (stalledFor < this.o.stallMs) return;
    // A failed step ends the fit: the report to keep is the one from before it.
    if (this.o.members().some((h) => h.progress?.state === "failed")) return;
    this.latest = this.report();
    if (stalledFor < this.nextAt) return;
    this.nextAt *= 2;
    this.o.print(this.latest);
  }

  /** For a step timeout's error: the report made while the fit was stalled, or one made now. */
  reportForTimeout(): string {
    return this.latest ?? this.report();
  }

  /** Who waits for whom, now. */
  report(): string {
    const now = performance.now();
    const step = this.o.step();
    const members = this.o.members();
    const workers = members.filter((h) => h.role === "worker" && !h.lost);
    // Arrived: alive, and waiting on the others or done with every step it was sent. A worker
    // with a step to do that is not waiting is computing (or has not started); a silent one's
    // last report is stale.
    const arrived = workers.filter(
      (h) => !silent(h, this.o.heartbeatIntervalMs) && (h.progress?.state === "waiting" || h.channel.unanswered === 0),
    );
    const missing = workers.filter((h) => !arrived.includes(h));
    const op =
      mostCommon(arrived.filter((h) => h.progress?.state === "waiting").map((h) => h.progress!.action)) ??
      `the replies to step ${step ?? "?"}`;
    const lines = [
      `meshtrain: stalled: no step has finished for ${secs(now - this.last)}${step !== undefined ? ` (at step ${step})` : ""}; a report comes after ${secs(this.o.stallMs)} without progress, the step times out after ${secs(this.o.stepMs)}`,
      `  waiting: ${op}`,
      `  arrived: ${arrived.map((h) => h.label).join(", ") || "none"}`,
      `  missing: ${missing.map((h) => h.label).join(", ") || "none"}`,
      ...members.map((h) => `  ${h.label}: ${describe(h, now, this.o)}`),
    ];
    return lines.join("\n");
  }
}

/**
 * Not heard from (not even a heartbeat answer) for two heartbeat intervals, beyond the driver's
 * own stalls: frozen, or its host is swamped. A driver that stood still has heard nobody.
 */
function silent(h: WorkerHandle, intervalMs: number): boolean {
  return h.channel.peerSilenceMs() > 2 * intervalMs;
}

function describe(
  h: WorkerHandle,
  now: number,
  o: Pick<StallWatchOptions, "heartbeatIntervalMs" | "heartbeatTimeoutMs">,
): string {
  if (h.lost) return `lost (${h.lost.summary})`;
  const p = h.progress;
  const heard = `last heard from ${secs(h.channel.silentForMs())} ago`;
  if (silent(h, o.heartbeatIntervalMs)) {
    const last = p
      ? `${p.state === "waiting" ? "waiting for " : ""}${p.action}, since ${secs(now - p.since)} ago`
      : "none";
    return `silent: ${heard} (frozen or swamped; lost after ${secs(o.heartbeatTimeoutMs)} of silence); its last report: ${last}`;
  }
  const doing = p
    ? `${p.state === "waiting" ? "waiting for " : ""}${p.action} for ${secs(now - p.since)}${p.detail ? ` (${p.detail})` : ""}`
    : "no progress reported yet";
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
