import { median } from "../../util/median";
import type { OverlapTrialRecord } from "../../metrics/records";

/** Steps before the trial: the ones the run's throughput leaves out as warm-up (JIT, first buffers). */
const FIRST = 3;
/** Steps timed each way, alternating (interleaved, so that the machine's drift falls on both alike). */
const EACH = 8;
/** A fit shorter than this keeps the rule's choice: three quarters of its steps must run with the one kept. */
const MIN_STEPS = 4 * (FIRST + 2 * EACH);
/** The trial's steps, counted from its first. */
const LENGTH = 2 * EACH;
/**
 * How much faster buckets must be to be kept: they take a thread that the backward pass then
 * shares its core with, so a tie goes to one all-reduce after it (the rule's choice).
 */
const MARGIN = 1.03;
/** The trial's terms, for the lines that tell of it. */
export const TRIAL = Object.freeze({
  first: FIRST,
  last: FIRST + LENGTH - 1,
  each: EACH,
  minSteps: MIN_STEPS,
  margin: MARGIN,
});

/**
 * Overlap "auto" where the rule could not tell (no core to spare for the all-reduce's thread):
 * the fit's steps FIRST .. FIRST + 2 EACH - 1 alternate buckets during the backward pass and one
 * all-reduce after it, and the faster by median is kept for the rest of the fit. A step's time is
 * the slower replica's, from its compute's start to its update's end: the driver's interval
 * between two steps' ends also holds its own messages and, with two steps in flight, moved with
 * their phase (4.0 and 6.5 ms one run, 6.2 and 4.5 the next, on the same 1.5 MB model). Both
 * ways sum the same values in the same ring: with 2 replicas (one addition a value) to the bit,
 * with more in another order where a bucket's edge moves a value's chunk, as any bucket size
 * does. Steps already sent when the last trial step ends keep the rule's choice.
 */
export class OverlapTrial {
  private readonly times = { on: [] as number[], off: [] as number[] };
  private kept: boolean | null = null;
  private keptFrom: number | null = null;
  private refused: string | null = null;

  private constructor(private readonly start: number) {}

  /** A trial for a fit of `steps` steps from `startStep`, or why there is none. */
  static of(startStep: number, steps: number): OverlapTrial | { kept: false; skipped: string } {
    if (steps < MIN_STEPS)
      return {
        kept: false,
        skipped: `this fit's ${steps} step(s) are too few to time both ways (${MIN_STEPS} or more)`,
      };
    return new OverlapTrial(startStep + FIRST);
  }

  /** Whether `step` all-reduces in buckets during the backward pass, as the trial sends it. */
  flag(step: number): boolean {
    const i = step - this.start;
    if (i >= 0 && i < LENGTH && this.refused === null) return i % 2 === 0;
    if (this.kept === null) return false;
    this.keptFrom ??= step;
    return this.kept;
  }

  /** `step` took `ms` on its slower replica; `overlapped`: every replica's all-reduce went in buckets. */
  ended(step: number, ms: number, overlapped: boolean): void {
    const i = step - this.start;
    if (i < 0 || i >= LENGTH || this.refused !== null) return;
    const on = i % 2 === 0;
    // A plane or a step that cannot overlap (the WebSocket links, TF.js's autodiff) would time the same thing twice.
    if (on && !overlapped) {
      this.refused =
        "a step asked to overlap all-reduced after the backward pass: this data plane or replica step cannot overlap";
      return;
    }
    this.times[on ? "on" : "off"].push(ms);
    if (this.times.on.length === EACH && this.times.off.length === EACH) {
      this.kept = median(this.times.on) * MARGIN <= median(this.times.off);
    }
  }

  /** What the trial found, for the run's record (null before it ended). */
  record(): OverlapTrialRecord | null {
    if (this.refused !== null) return { kept: false, refused: this.refused };
    if (this.kept === null) return null;
    return {
      kept: this.kept,
      steps: [this.start, this.start + LENGTH - 1],
      onMs: median(this.times.on),
      offMs: median(this.times.off),
      ...(this.keptFrom !== null ? { from: this.keptFrom } : {}),
    };
  }
}

/** The trial a data-parallel fit runs: none unless its plan asked (`timed`) and its replicas step natively (autodiff sums at once). */
export function overlapTrialFor(
  timed: boolean,
  nativeStep: boolean,
  startStep: number,
  steps: number,
): OverlapTrial | { kept: false; skipped: string } | null {
  return timed && nativeStep ? OverlapTrial.of(startStep, steps) : null;
}

/** A step's time on its slower replica: computing, summing (waiting for the others included) and updating. */
export function slowerReplicaMs(
  replies: ReadonlyArray<{ msg: { computeMs: number; commMs: number; waitMs: number; applyMs: number } }>,
): number {
  return Math.max(...replies.map(({ msg: m }) => m.computeMs + m.commMs + m.waitMs + m.applyMs));
}
