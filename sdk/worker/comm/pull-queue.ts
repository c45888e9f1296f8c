/**
 * A parameter server's answers to pulls, put on the wire one at a time: the next one's frames go
 * once the last one's were all handed to the operating system. Sent together, the pulls of a
 * step share the server's link and all end together, after every pull's time, so every worker
 * waits as long as the last. One at a time, the first worker has its parameters after one pull's
 * time and computes and pushes (the link's other direction) while the next pull goes out.
 *
 * Measured between namespace hosts at 1 Gbit/s, 2 workers on the 11.4M MLP (45.6 MB a pull):
 * sync 75.4 samples/s sent together, 88.5 one at a time; async 101.5 and 112.9. Pulls of the
 * small MLP (1.1 MB) fit the sockets' buffers and leave at once either way: 481 and 495 at
 * 100 Mbit/s, within noise.
 *
 * A pull holds the next back only as long as its bytes take at HOLD_BYTES_PER_SECOND: a worker
 * that stopped reading (frozen, or on a link slower than that) must not stall the others' pulls.
 */
export class PullQueue {
  private last: Promise<void> = Promise.resolve();

  /** `send` runs after the sends queued before it were handed over, or held the queue as long as their bytes allow; one that fails does not hold up the next. */
  enqueue(send: () => Promise<void>, bytes: number): void {
    const holdMs = HOLD_MIN_MS + (bytes / HOLD_BYTES_PER_SECOND) * 1000;
    this.last = this.last.then(
      () =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, holdMs);
          const done = (): void => {
            clearTimeout(timer);
            resolve();
          };
          try {
            send().then(done, done);
          } catch {
            done();
          }
        }),
    );
  }
}

/** 80 Mbit/s: links at least that fast take pulls one at a time to the end. */
export const HOLD_BYTES_PER_SECOND = 10e6;
export const HOLD_MIN_MS = 250;
