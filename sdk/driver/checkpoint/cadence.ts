import { median } from "../../util/median";

/** `every: "auto"`: the most of a fit's time its checkpoints may take. */
export const AUTO_SHARE = 0.05;
/** `every: "auto"`: the steps before the first checkpoint, whose time (and the steps') sets the interval. */
export const AUTO_FIRST = 4;

/** The interval "auto" chose, and the times it chose it from. */
export interface CadenceChoice {
  every: number;
  saveMs: number;
  stepMs: number;
}

/**
 * When a fit writes its checkpoints: every `every` steps (at multiples of it, so a resumed fit
 * keeps the same ones), or "auto": the first after AUTO_FIRST steps, timed, and from then on
 * every k steps with k the fewest that keeps writing them within AUTO_SHARE of the fit's time
 * (k = ceil(write time / (5% of a step))). What a loss costs is the steps since the last one, so
 * "auto" trades that against the time the checkpoints take, at a bound the user can read.
 */
export class Cadence {
  private interval: number | null;
  private last = 0;
  private chosen_: CadenceChoice | null = null;

  constructor(readonly every: number | "auto") {
    this.interval = every === "auto" ? null : every;
  }

  /** A loop (or a loop run again after a loss) starts at `step`: the next checkpoint counts from there. */
  begin(step: number): void {
    this.last = step;
  }

  /** Whether a checkpoint is due with `step` steps done (none at the loop's start). */
  due(step: number): boolean {
    if (step <= this.last) return false;
    if (this.every !== "auto") return step % this.every === 0;
    return step - this.last >= (this.interval ?? AUTO_FIRST);
  }

  /**
   * Writes a checkpoint of `step` steps (`write`; false from it: nothing was written), timed
   * against the last steps in `history`: "auto" chooses its interval from the first.
   */
  async write(
    step: number,
    history: readonly { ms: number }[],
    write: () => Promise<boolean | void>,
  ): Promise<boolean> {
    const t0 = performance.now();
    if ((await write()) === false) return false;
    this.saved(
      step,
      performance.now() - t0,
      history.slice(-AUTO_FIRST).map((r) => r.ms),
    );
    return true;
  }

  /** A checkpoint of `step` steps was written in `saveMs`; `stepMs`: the recent steps' times. */
  saved(step: number, saveMs: number, stepMs: readonly number[]): void {
    this.last = step;
    if (this.every !== "auto" || this.interval !== null || stepMs.length === 0) return;
    const perStep = Math.max(median(stepMs), 1e-3);
    this.interval = Math.min(1_000_000, Math.max(1, Math.ceil(saveMs / (AUTO_SHARE * perStep))));
    this.chosen_ = { every: this.interval, saveMs, stepMs: perStep };
  }

  /** What "auto" chose (null: a fixed interval, or none chosen yet). */
  get chosen(): CadenceChoice | null {
    return this.chosen_;
  }
}
