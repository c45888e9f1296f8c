import type { Link } from "./link";

/**
 * Heartbeats for one Link: pings every interval and reports once when nothing (message or
 * pong) was heard for longer than the timeout. Owners call heard() on every inbound frame.
 *
 * Time this process itself stood still does not count against the peer. A tick that comes
 * more than two intervals after the last one means this process stalled (a long synchronous
 * task, a swamped or paused machine): meanwhile no ping went out, and the peer's answers may
 * sit unread in the socket until the next poll. Without this, one second of the driver's own
 * stall was reported as a worker "silent for 1155 ms" under a 1000 ms timeout.
 */
export class Liveness {
  private last = Date.now();
  private lastTick = 0;
  /** This process's own stalls since the peer was last heard, not held against the peer. */
  private ownStallMs = 0;
  private intervalMs = 0;
  private timer: NodeJS.Timeout | undefined;

  heard(): void {
    this.last = Date.now();
    this.ownStallMs = 0;
  }

  silentForMs(): number {
    return Date.now() - this.last;
  }

  /** The silence not explained by this process's own stalls (counting one under way): the part that is the peer's. */
  peerSilenceMs(): number {
    const now = Date.now();
    const stalling = this.timer ? this.stalledSince(now) : 0;
    return Math.max(0, now - this.last - this.ownStallMs - stalling);
  }

  private stalledSince(now: number): number {
    return Math.max(0, now - this.lastTick - 2 * this.intervalMs);
  }

  /**
   * `timeoutMs` may be a function, asked at each tick: the limit that holds now (a worker waits
   * longer for a driver between fits than within one). `onSilent` is told the limit it passed.
   */
  start(
    link: Link,
    intervalMs: number,
    timeoutMs: number | (() => number),
    onSilent: (silentMs: number, limitMs: number) => void,
  ): void {
    const limit = typeof timeoutMs === "number" ? () => timeoutMs : timeoutMs;
    this.stop();
    this.last = Date.now();
    this.lastTick = this.last;
    this.ownStallMs = 0;
    this.intervalMs = intervalMs;
    this.timer = setInterval(() => {
      const now = Date.now();
      this.ownStallMs += this.stalledSince(now);
      this.lastTick = now;
      const silent = now - this.last;
      const limitMs = limit();
      if (silent - this.ownStallMs > limitMs) {
        this.stop();
        onSilent(silent, limitMs);
        return;
      }
      link.ping();
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
