import type { Channel } from "../../transport/channel";

/**
 * What the worker is doing, as the driver's stall reports show it: the compute thread says what
 * it starts, the communication thread adds who a wait is for (it holds the links), and the
 * driver hears of a change at most once per heartbeat interval. A frozen worker sends nothing,
 * so its last report is what it was doing when it froze.
 */
export class ProgressReporter {
  private action = "joined, no model loaded";
  private waiting = false;
  private since = performance.now();
  private lastSent = "";
  private timer: NodeJS.Timeout | undefined;

  /** `detail`: who a waiting action waits for, asked of the links when a report is made. */
  constructor(private readonly detail: () => string | undefined) {}

  set(action: string, waiting: boolean): void {
    if (action === this.action && waiting === this.waiting) return;
    this.action = action;
    this.waiting = waiting;
    this.since = performance.now();
  }

  start(channel: Channel, intervalMs: number): void {
    this.stop();
    this.timer = setInterval(() => this.report(channel), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private report(channel: Channel): void {
    if (channel.closed) return;
    const detail = this.waiting ? this.detail() : undefined;
    const key = `${this.action}|${this.waiting}|${detail ?? ""}|${this.since}`;
    if (key === this.lastSent) return;
    this.lastSent = key;
    channel.send({ type: "progress", action: this.action, waiting: this.waiting, ...(detail ? { detail } : {}), forMs: performance.now() - this.since });
  }
}
