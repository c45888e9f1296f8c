import type { Link } from "./link";

/**
 * Heartbeats for one Link: pings every interval and reports once when nothing (message or
 * pong) was heard for longer than the timeout. Owners call heard() on every inbound frame.
 */
export class Liveness {
  private last = Date.now();
  private timer: NodeJS.Timeout | undefined;

  heard(): void {
    this.last = Date.now();
  }

  silentForMs(): number {
    return Date.now() - this.last;
  }

  start(link: Link, intervalMs: number, timeoutMs: number, onSilent: (silentMs: number) => void): void {
    this.stop();
    this.last = Date.now();
    this.timer = setInterval(() => {
      const silent = this.silentForMs();
      if (silent > timeoutMs) {
        this.stop();
        onSilent(silent);
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
