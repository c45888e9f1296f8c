/** A pull held back until its version is reached: resolved with how long it waited. */
interface Waiter {
  minVersion: number;
  since: number;
  timer: ReturnType<typeof setTimeout>;
  resolve(waitedMs: number): void;
  reject(err: unknown): void;
}

/**
 * A sync parameter server's pulls that asked for a version it has not reached yet. Each waits
 * until the version is reached, or its deadline passes (the error says whose pushes never came),
 * or the server is loaded again (the error says so): none is left waiting for nothing.
 */
export class VersionWaiters {
  private readonly waiting = new Set<Waiter>();

  wait(minVersion: number, timeoutMs: number, timedOut: () => Error): Promise<number> {
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        minVersion,
        since: performance.now(),
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiting.delete(w);
          reject(timedOut());
        }, timeoutMs),
      };
      this.waiting.add(w);
    });
  }

  /** The version moved on: the pulls it satisfies are answered. */
  reached(version: number): void {
    for (const w of [...this.waiting]) {
      if (w.minVersion > version) continue;
      this.waiting.delete(w);
      clearTimeout(w.timer);
      w.resolve(performance.now() - w.since);
    }
  }

  /** Every pull still waiting fails with `err`. */
  fail(err: Error): void {
    for (const w of this.waiting) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    this.waiting.clear();
  }
}
