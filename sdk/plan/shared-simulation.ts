import { PlanError } from "../errors/errors";
import { actionKey, actionLabel, dependencyOf, type Action, type Schedule, type TimedAction } from "./schedules";

/** An action's time alone: computing on its stage, then handing its result to the neighbour that waits for it. */
export interface ActionCost {
  computeMs: number;
  sendMs: number;
}

interface Activity {
  /** The stage computing, or -1 for a hand-off between stages (it does not hold a stage). */
  readonly stage: number;
  readonly a: Action;
  readonly start: number;
  /** Work left, in time alone. */
  left: number;
  /** What finishing it delivers: an action's result to its hand-off, or a hand-off's to the stage waiting. */
  readonly key: string;
  readonly sendMs: number;
}

/**
 * The schedule on a clock where everything running at once shares the machine (processor
 * sharing): stages computing, and hand-offs of activations and gradients, which on one machine
 * are threads copying bytes through sockets. While `busy` such things run, each advances at
 * 1 / slowdown(busy) of its speed alone; a hand-off counts as `handOffLoad` of them (the
 * sender's and the receiver's communication threads, which copy and frame the bytes), and its
 * time alone, measured with one link busy, counts as `handOffAlone` of them. A stage is free
 * for its next action once it has computed; the neighbour waits for the hand-off. The order
 * and dependencies are simulate()'s; throws if the schedule deadlocks.
 */
export function simulateShared(
  schedule: Schedule,
  cost: (stage: number, a: Action) => ActionCost,
  slowdown: (busy: number) => number,
  o: { handOffLoad?: number; handOffAlone?: number } = {},
): TimedAction[][] {
  const handOffLoad = o.handOffLoad ?? 2;
  const aloneShared = Math.max(1, slowdown(o.handOffAlone ?? handOffLoad));
  const S = schedule.stages;
  const st = { done: new Set<string>(), next: new Array<number>(S).fill(0), running: [] as Activity[], now: 0 };
  const out: TimedAction[][] = Array.from({ length: S }, () => []);
  // Each round ends at least one action or hand-off: more rounds than that is a bug, not a long schedule.
  const rounds = 2 * schedule.actions.reduce((n, acts) => n + acts.length, 0) + 1;
  for (let round = 0; ; round++) {
    if (round > rounds) throw new PlanError(`schedule ${schedule.name} did not finish in ${rounds} rounds`);
    startReady(schedule, st, cost);
    if (st.running.length === 0) break;
    const load = st.running.reduce((n, r) => n + (r.stage < 0 ? handOffLoad : 1), 0);
    const shared = Math.max(1, slowdown(load));
    // A hand-off's time alone was measured with one link's two ends running: only the rest slows it.
    const rate = (r: Activity): number => (r.stage < 0 ? aloneShared : 1) / shared;
    const dt = Math.min(...st.running.map((r) => r.left / rate(r)));
    st.now += dt;
    const finished = st.running.filter((r) => (r.left -= dt * rate(r)) <= 1e-9 * Math.max(1, r.left + dt * rate(r)));
    st.running = st.running.filter((r) => !finished.includes(r));
    for (const r of finished) {
      if (r.stage < 0) {
        st.done.add(r.key);
        continue;
      }
      out[r.stage]!.push({ ...r.a, stage: r.stage, start: r.start, end: st.now });
      // The hand-off starts as the action ends; an action with nothing to send delivers at once.
      st.running.push({ stage: -1, a: r.a, start: st.now, left: r.sendMs, key: r.key, sendMs: 0 });
    }
  }
  if (st.next.some((n, s) => n < schedule.actions[s]!.length)) {
    const stuck = schedule.actions
      .map((acts, s) => `stage ${s} at ${acts[st.next[s]!] ? actionLabel(acts[st.next[s]!]!) : "end"}`)
      .join(", ");
    throw new Error(`schedule ${schedule.name} deadlocks: ${stuck}`);
  }
  return out;
}

/** Every idle stage whose next action's input has arrived starts it now. */
function startReady(
  schedule: Schedule,
  st: { done: ReadonlySet<string>; next: number[]; running: Activity[]; now: number },
  cost: (stage: number, a: Action) => ActionCost,
): void {
  for (let s = 0; s < schedule.stages; s++) {
    const a = schedule.actions[s]![st.next[s]!];
    if (!a || st.running.some((r) => r.stage === s)) continue;
    const dep = dependencyOf(schedule.stages, s, a);
    if (dep !== null && !st.done.has(dep)) continue;
    const c = cost(s, a);
    for (const [what, ms] of [
      ["computing", c.computeMs],
      ["handing on", c.sendMs],
    ] as const) {
      if (!Number.isFinite(ms) || ms < 0) {
        throw new PlanError(`stage ${s}'s ${actionLabel(a)} costs ${ms} ms ${what}: no plan can be priced with it`, {
          hint: 'strategy("data") prices the whole step and trains the model; report the model, since each layer should have a cost',
          details: { stage: s },
        });
      }
    }
    st.running.push({ stage: s, a, start: st.now, left: c.computeMs, key: actionKey(s, a), sendMs: c.sendMs });
    st.next[s]!++;
  }
}
