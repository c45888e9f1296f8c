import type { FitWatch } from "../metrics/observer";
import type { StepRecord } from "../metrics/records";

/**
 * model.fit's verbose 2: one line per epoch, its time, the loss and compiled metrics as the
 * History has them (each step's weighted by its samples), and the validation's where the fit
 * validates (the line then waits for it).
 */
export class EpochLines implements FitWatch {
  private epoch = -1;
  private samples = 0;
  private sums: Record<string, number> = {};
  private startedMs = 0;
  private lastMs = 0;
  private readonly printed = new Set<number>();

  constructor(
    private readonly epochs: number,
    private readonly validating: boolean,
    private readonly write: (line: string) => void = (line) => void process.stderr.write(line),
  ) {}

  step = (r: StepRecord): void => {
    if (r.epoch !== this.epoch) {
      if (this.epoch >= 0 && !this.validating) this.print(this.epoch, {});
      this.epoch = r.epoch;
      this.samples = 0;
      this.sums = {};
      this.startedMs = r.endMs - r.ms;
    }
    if (r.skipped || !Number.isFinite(r.loss)) return;
    this.lastMs = r.endMs;
    this.samples += r.samples;
    for (const [k, v] of Object.entries({ loss: r.loss, ...(r.metrics ?? {}) }))
      this.sums[k] = (this.sums[k] ?? 0) + v * r.samples;
  };

  /** The epoch's validation logs (val_loss, val_ metrics): its line is printed with them. */
  validated(epoch: number, logs: Record<string, number>): void {
    if (epoch === this.epoch) this.print(epoch, logs);
  }

  end = (): void => {
    if (this.epoch >= 0) this.print(this.epoch, {});
  };

  private print(epoch: number, validation: Record<string, number>): void {
    if (this.printed.has(epoch)) return;
    this.printed.add(epoch);
    const means = Object.entries(this.sums).map(([k, v]) => `${k}=${(v / Math.max(1, this.samples)).toFixed(4)}`);
    const val = Object.entries(validation).map(([k, v]) => `${k}=${v.toFixed(4)}`);
    this.write(
      `Epoch ${epoch + 1} / ${this.epochs}: ${Math.round(this.lastMs - this.startedMs)} ms, ${[...means, ...val].join(" ")}\n`,
    );
  }
}
