import type { WorkerOutputSpec } from "../config/cluster-spec";
import type { LogLine } from "../metrics/records";

/** Lines the driver keeps per cluster, oldest dropped first (a run's share is copied at its end). */
const KEPT_LINES = 10_000;

interface Bucket {
  tokens: number;
  at: number;
  held: number;
}

/**
 * Where every worker's output arrives on the driver (through a local worker's pipes, or as
 * "output" messages from a worker started elsewhere): shown with its rank as prefix, stdout
 * lines on this process's stdout and stderr lines on its stderr, as torchrun does; limited per
 * worker to `linesPerSecond` (bursts of five seconds' worth) so that a print in a layer's call()
 * cannot flood a notebook, the lines held back counted and summarised; and kept for run.logs.
 */
export class WorkerOutput {
  private readonly kept: LogLine[] = [];
  /** Lines received in all, so a fit can take the ones after a mark even when old ones were dropped. */
  private received = 0;
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly spec: WorkerOutputSpec,
    private readonly write: (stream: "stdout" | "stderr", text: string) => void = writeToProcess,
  ) {}

  line(from: string, stream: "stdout" | "stderr", text: string): void {
    this.kept.push({ from, stream, text, time: Date.now() });
    this.received++;
    if (this.kept.length > KEPT_LINES) this.kept.shift();
    if (!this.shown(stream)) return;
    const b = this.bucket(from);
    if (b.tokens < 1) {
      b.held++;
      return;
    }
    b.tokens--;
    this.summarise(from, b);
    this.write(stream, `[${from}] ${text}\n`);
  }

  /** Lines a worker started elsewhere dropped itself: it printed faster than it may send them. */
  droppedAtWorker(from: string, count: number): void {
    if (count > 0 && this.spec.level !== "none")
      this.write(
        "stderr",
        `[${from}] (${count} line${count === 1 ? "" : "s"} dropped by the worker: it printed faster than it may send them)\n`,
      );
  }

  /** Says how many lines were held back, for every worker that has some: at the end of a fit and at close. */
  flush(): void {
    for (const [from, b] of this.buckets) this.summarise(from, b);
  }

  /** A position in the stream of lines, for since(). */
  mark(): number {
    return this.received;
  }

  /** The lines received after `mark` that are still kept. */
  since(mark: number): LogLine[] {
    const first = this.received - this.kept.length;
    return this.kept.slice(Math.max(0, mark - first));
  }

  /** The last `n` lines kept from `from`, oldest first. */
  lastLines(from: string, n: number): string[] {
    const out: string[] = [];
    for (let i = this.kept.length - 1; i >= 0 && out.length < n; i--)
      if (this.kept[i]!.from === from) out.push(this.kept[i]!.text);
    return out.reverse();
  }

  /** Every line still kept (the last 10,000). */
  all(): readonly LogLine[] {
    return this.kept;
  }

  private shown(stream: "stdout" | "stderr"): boolean {
    return this.spec.level === "all" || (this.spec.level === "warnings" && stream === "stderr");
  }

  private bucket(from: string): Bucket {
    const now = performance.now();
    const burst = 5 * this.spec.linesPerSecond;
    let b = this.buckets.get(from);
    if (!b) {
      b = { tokens: burst, at: now, held: 0 };
      this.buckets.set(from, b);
    }
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * this.spec.linesPerSecond);
    b.at = now;
    return b;
  }

  private summarise(from: string, b: Bucket): void {
    if (b.held === 0) return;
    this.write(
      "stderr",
      `[${from}] (${b.held} line${b.held === 1 ? "" : "s"} not shown: more than ${this.spec.linesPerSecond} a second; run.logs has them)\n`,
    );
    b.held = 0;
  }
}

function writeToProcess(stream: "stdout" | "stderr", text: string): void {
  process[stream].write(text);
}
