import { SingleBar } from "cli-progress";
import type { FitWatch } from "../metrics/observer";
import type { StepRecord } from "../metrics/records";

/**
 * A terminal progress bar for a fit: step, epoch, loss and samples/s over the last steps.
 * Without a TTY (CI logs) it prints a line every `every` steps instead.
 */
export class FitProgress {
  private readonly bar: SingleBar | null;
  private recent: StepRecord[] = [];
  private readonly tty: boolean;

  constructor(
    private readonly totalSteps: number,
    private readonly every = 25,
  ) {
    this.tty = Boolean(process.stderr.isTTY);
    this.bar = this.tty
      ? new SingleBar({
          format: "training |{bar}| {value}/{total} steps | epoch {epoch} | loss {loss} | {rate} samples/s",
          stream: process.stderr,
          hideCursor: true,
          clearOnComplete: false,
        })
      : null;
    this.bar?.start(totalSteps, 0, { epoch: 1, loss: "-", rate: "-" });
  }

  /** Samples per second over the last few steps. */
  private rate(): number {
    const ms = this.recent.reduce((a, s) => a + s.ms, 0);
    return ms > 0 ? (this.recent.reduce((a, s) => a + s.samples, 0) * 1000) / ms : 0;
  }

  update = (s: StepRecord): void => {
    this.recent.push(s);
    if (this.recent.length > 10) this.recent.shift();
    const payload = { epoch: s.epoch + 1, loss: s.loss.toFixed(4), rate: this.rate().toFixed(0) };
    if (this.bar) this.bar.update(s.step + 1, payload);
    else if ((s.step + 1) % this.every === 0 || s.step + 1 === this.totalSteps) {
      process.stderr.write(
        `step ${s.step + 1}/${this.totalSteps}  epoch ${payload.epoch}  loss ${payload.loss}  ${payload.rate} samples/s\n`,
      );
    }
  };

  stop(): void {
    this.bar?.stop();
  }
}

/** The terminal's watch of a fit. */
export function terminalWatch(totalSteps: number): FitWatch {
  const p = new FitProgress(totalSteps);
  return { step: p.update, end: () => p.stop() };
}
