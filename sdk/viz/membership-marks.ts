import type { MembershipChange } from "../metrics/records";

/** A mark on a plot: where training went on after a worker left or joined, by step and by time. */
export interface MembershipMark {
  step: number;
  /** When the driver learned of it, ms since the fit started. */
  atMs: number;
  label: string;
}

/** Workers that left (lost, evicted) or joined an elastic fit, as marks for the per-step and per-time plots. */
export function membershipMarks(changes: readonly MembershipChange[]): MembershipMark[] {
  return changes.map((m) => ({
    step: m.step,
    atMs: m.atMs,
    label: `${m.server ? "server" : "rank"} ${m.rank} ${m.change} (${m.workers} training)`,
  }));
}
