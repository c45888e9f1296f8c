/**
 * Failed handshakes, counted per remote host: after `maxFailures` within `windowMs`, that host's
 * connections are closed unanswered until `banMs` has passed. Guessing a token online then costs
 * the guesser a round trip per guess and a pause every few, and fills no log.
 */
export class HandshakeLimiter {
  private readonly failures = new Map<string, number[]>();
  private readonly bannedUntil = new Map<string, number>();

  constructor(
    private readonly o: { maxFailures: number; windowMs: number; banMs: number } = {
      maxFailures: 5,
      windowMs: 60_000,
      banMs: 60_000,
    },
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** The host part of "host:port" (IPv6 addresses keep their colons). */
  static host(address: string): string {
    const i = address.lastIndexOf(":");
    return i > 0 ? address.slice(0, i) : address;
  }

  /** Whether a connection from `host` may try to authenticate now. */
  allowed(host: string): boolean {
    const until = this.bannedUntil.get(host);
    if (until === undefined) return true;
    if (this.now() >= until) {
      this.bannedUntil.delete(host);
      return true;
    }
    return false;
  }

  /** Records a failed handshake; returns true when this failure starts a ban (log it once). */
  failed(host: string): boolean {
    const t = this.now();
    const recent = (this.failures.get(host) ?? []).filter((at) => t - at < this.o.windowMs);
    recent.push(t);
    if (recent.length >= this.o.maxFailures) {
      this.failures.delete(host);
      this.bannedUntil.set(host, t + this.o.banMs);
      return true;
    }
    this.failures.set(host, recent);
    // Forget hosts that stopped trying, so the map stays small.
    if (this.failures.size > 10_000)
      for (const [h, ts] of this.failures) if (t - ts[ts.length - 1]! >= this.o.windowMs) this.failures.delete(h);
    return false;
  }

  /** A successful handshake clears the host's failures. */
  succeeded(host: string): void {
    this.failures.delete(host);
  }
}
