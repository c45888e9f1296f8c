import type { Channel } from "../../transport/channel";
import type { ActivityState } from "../bridge";

/**
 * What the worker is doing, as the driver's stall reports show it: the compute thread says what
 * it starts, the communication thread adds who a wait is for (it holds the links), and the
 * driver hears of a change at once if its last report is an interval old, else at the next
 * tick (at most twice per interval). A frozen worker sends nothing,
 * so its last report is what it was doing when it froze.
 */
export class ProgressReporter {
  private action = "joined, no model loaded";
  private state: ActivityState = "idle";
  private since = performance.now();
  private lastSent = "";
  private lastSentAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private channel: Channel | undefined;
  private intervalMs = 1000;

  /** `detail`: who a waiting action waits for, asked of the links when a report is made. */
  constructor(private readonly detail: () => string | undefined) {}

  set(action: string, state: ActivityState): void {
    if (action === this.action && state === this.state) return;
    this.action = action;
    this.state = state;
    this.since = performance.now();
    // At once when the last report is an interval old; else the next tick sends the latest.
    if (this.channel && performance.now() - this.lastSentAt >= this.intervalMs) this.report(this.channel);
  }

  start(channel: Channel, intervalMs: number): void {
    this.stop();
    this.channel = channel;
    this.intervalMs = intervalMs;
    this.timer = setInterval(() => this.report(channel), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.channel = undefined;
  }

  private report(channel: Channel): void {
    if (channel.closed) return;
    const detail = this.state === "waiting" ? this.detail() : undefined;
    const key = `${this.action}|${this.state}|${detail ?? ""}|${this.since}`;
    if (key === this.lastSent) return;
    this.lastSent = key;
    this.lastSentAt = performance.now();
    channel.send({
      type: "progress",
      action: this.action,
      state: this.state,
      ...(detail ? { detail } : {}),
      forMs: performance.now() - this.since,
    });
  }
}
