import type { Channel } from "../../transport/channel";

/** Lines sent to the driver per stream and batch; a worker printing in a tight loop cannot flood the link. */
const MAX_LINES_PER_BATCH = 500;
const BATCH_MS = 100;

/**
 * A worker started elsewhere sends what it prints to the driver in batches (local workers'
 * output reaches the driver through their pipes). Lines beyond a batch's limit are counted, and
 * the count travels with the next batch. Without a driver session the lines are dropped: they
 * were already written to this process's own terminal.
 */
export class OutputRelay {
  private readonly pending = { stdout: [] as string[], stderr: [] as string[] };
  private readonly dropped = { stdout: 0, stderr: 0 };
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly channel: () => Channel | undefined) {}

  add(stream: "stdout" | "stderr", lines: readonly string[]): void {
    const room = MAX_LINES_PER_BATCH - this.pending[stream].length;
    this.pending[stream].push(...lines.slice(0, Math.max(0, room)).map((l) => l.slice(0, 8192)));
    this.dropped[stream] += Math.max(0, lines.length - Math.max(0, room));
    this.timer ??= setTimeout(() => this.flush(), BATCH_MS);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const ch = this.channel();
    for (const stream of ["stdout", "stderr"] as const) {
      const lines = this.pending[stream];
      const dropped = this.dropped[stream];
      this.pending[stream] = [];
      this.dropped[stream] = 0;
      if (!ch || ch.closed || (lines.length === 0 && dropped === 0)) continue;
      ch.send({ type: "output", stream, lines, ...(dropped > 0 ? { dropped } : {}) });
    }
  }
}
