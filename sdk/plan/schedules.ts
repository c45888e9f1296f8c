/**
 * Pipeline schedules as plain data: for each stage, the ordered list of what it does, like
 * `F0 F1 B0 F2 B1 ...` (forward or backward of a micro-batch). The same data is tested,
 * printed as a stage x time grid, drawn as a timeline and executed by the pipeline runtime.
 */

export type ScheduleName = "gpipe" | "1f1b";
export const SCHEDULE_NAMES = ["gpipe", "1f1b"] as const;

/** One thing a pipeline stage does: F (forward) or B (backward) of a micro-batch; prints as "1F0". */
export interface Action {
  kind: "F" | "B";
  micro: number;
}

/** A pipeline schedule as data: each stage's list of actions, in order. */
export interface Schedule {
  readonly name: ScheduleName;
  readonly stages: number;
  readonly microBatches: number;
  /** actions[s]: what stage s does, in order. */
  readonly actions: readonly (readonly Action[])[];
}

export function actionLabel(a: Action): string {
  return `${a.kind}${a.micro}`;
}

/** GPipe: every stage runs all its forwards, then all its backwards. M micro-batches in flight. */
export function gpipe(stages: number, microBatches: number): Schedule {
  const one = (): Action[] => [
    ...Array.from({ length: microBatches }, (_, m) => ({ kind: "F" as const, micro: m })),
    ...Array.from({ length: microBatches }, (_, m) => ({ kind: "B" as const, micro: m })),
  ];
  return Object.freeze({
    name: "gpipe" as const,
    stages,
    microBatches,
    actions: Object.freeze(Array.from({ length: stages }, one)),
  });
}

/**
 * 1F1B (PipeDream-flush): stage s warms up with S-1-s forwards, then alternates one forward and
 * one backward, then drains. At most S-s micro-batches are in flight on stage s.
 */
export function oneFOneB(stages: number, microBatches: number): Schedule {
  const actions = Array.from({ length: stages }, (_, s) => {
    const out: Action[] = [];
    const warmup = Math.min(stages - 1 - s, microBatches);
    for (let m = 0; m < warmup; m++) out.push({ kind: "F", micro: m });
    let f = warmup;
    for (let b = 0; b < microBatches; b++) {
      if (f < microBatches) out.push({ kind: "F", micro: f++ });
      out.push({ kind: "B", micro: b });
    }
    return out;
  });
  return Object.freeze({ name: "1f1b" as const, stages, microBatches, actions: Object.freeze(actions) });
}

/** The actions of every stage under GPipe (all forwards, then all backwards) or 1F1B (one forward, one backward). */
export function makeSchedule(name: ScheduleName, stages: number, microBatches: number): Schedule {
  return name === "gpipe" ? gpipe(stages, microBatches) : oneFOneB(stages, microBatches);
}

export interface TimedAction extends Action {
  stage: number;
  start: number;
  end: number;
}

/** The action `a` on stage `s` waits for (as actionKey names it), or null: F of m waits for F of m one stage up, B of m for B of m one stage down (the last stage's, for its own F). */
export function dependencyOf(stages: number, s: number, a: Action): string | null {
  if (a.kind === "F") return s > 0 ? actionKey(s - 1, a) : null;
  return s < stages - 1 ? actionKey(s + 1, a) : actionKey(s, { kind: "F", micro: a.micro });
}

export function actionKey(stage: number, a: Action): string {
  return `${a.kind}${stage}.${a.micro}`;
}

/**
 * Runs the schedule on an idealised clock: a stage does its actions in order; F of micro-batch m
 * on stage s waits for F of m on stage s-1, and B of m on stage s for B of m on stage s+1.
 * `cost(stage, action)` gives durations (default 1 for F, 2 for B). Throws if it deadlocks.
 */
export function simulate(
  schedule: Schedule,
  cost: (stage: number, a: Action) => number = (_s, a) => (a.kind === "F" ? 1 : 2),
): TimedAction[][] {
  const S = schedule.stages;
  const done = new Map<string, number>();
  const next = new Array<number>(S).fill(0);
  const free = new Array<number>(S).fill(0);
  const out: TimedAction[][] = Array.from({ length: S }, () => []);
  let remaining = schedule.actions.reduce((n, a) => n + a.length, 0);
  while (remaining > 0) {
    let progressed = false;
    for (let s = 0; s < S; s++) {
      const a = schedule.actions[s]![next[s]!];
      if (!a) continue;
      const dep = dependencyOf(S, s, a);
      const ready = dep === null ? 0 : done.get(dep);
      if (ready === undefined) continue;
      const start = Math.max(free[s]!, ready);
      const end = start + cost(s, a);
      out[s]!.push({ ...a, stage: s, start, end });
      done.set(actionKey(s, a), end);
      free[s] = end;
      next[s]!++;
      remaining--;
      progressed = true;
    }
    if (!progressed) {
      const stuck = schedule.actions
        .map((acts, s) => `stage ${s} at ${acts[next[s]!] ? actionLabel(acts[next[s]!]!) : "end"}`)
        .join(", ");
      throw new Error(`schedule ${schedule.name} deadlocks: ${stuck}`);
    }
  }
  return out;
}

/** What is wrong with a schedule, if anything: every F and B once per micro-batch, F before B, no deadlock. */
export function checkSchedule(schedule: Schedule): string[] {
  const problems: string[] = [];
  schedule.actions.forEach((acts, s) => {
    for (const kind of ["F", "B"] as const) {
      const micros = acts
        .filter((a) => a.kind === kind)
        .map((a) => a.micro)
        .sort((x, y) => x - y);
      if (micros.join() !== Array.from({ length: schedule.microBatches }, (_, m) => m).join())
        problems.push(`stage ${s} runs ${kind} for micro-batches [${micros.join(", ")}]`);
    }
    acts.forEach((a, i) => {
      if (a.kind === "B" && !acts.slice(0, i).some((p) => p.kind === "F" && p.micro === a.micro))
        problems.push(`stage ${s} runs B${a.micro} before F${a.micro}`);
    });
  });
  if (problems.length === 0) {
    try {
      simulate(schedule);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return problems;
}

/** The most micro-batches whose activations a stage holds at once (forwards done, backwards not yet). */
export function maxInFlight(schedule: Schedule, stage: number): number {
  return actionsInFlight(schedule.actions[stage]!);
}

/** The most micro-batches whose forward ran and whose backward has not, over one stage's actions. */
export function actionsInFlight(actions: readonly Action[]): number {
  let live = 0;
  let max = 0;
  for (const a of actions) {
    live += a.kind === "F" ? 1 : -1;
    max = Math.max(max, live);
  }
  return max;
}

/** Idle share of the stages over the step: sum of idle time / (stages x makespan). */
export function bubbleFraction(timed: readonly (readonly TimedAction[])[]): number {
  const end = Math.max(...timed.flat().map((a) => a.end));
  const start = Math.min(...timed.flat().map((a) => a.start));
  const span = end - start;
  const busy = timed.flat().reduce((n, a) => n + (a.end - a.start), 0);
  return span > 0 ? 1 - busy / (timed.length * span) : 0;
}

/** GPipe's idle share with equal stages and free communication: (S-1)/(M+S-1). */
export function theoreticalBubble(stages: number, microBatches: number): number {
  return (stages - 1) / (microBatches + stages - 1);
}

/** The stage x time grid, one column per time unit (F takes 1 unit, B 2, as in the simulation). */
export function formatSchedule(schedule: Schedule): string {
  const timed = simulate(schedule);
  const end = Math.max(...timed.flat().map((a) => a.end));
  const width = Math.max(3, String(schedule.microBatches - 1).length + 2);
  const head = `${schedule.name}: ${schedule.stages} stages, ${schedule.microBatches} micro-batches (F = 1 unit, B = 2)`;
  const rows = timed.map((acts, s) => {
    const cells = new Array<string>(end).fill(".".padEnd(width));
    for (const a of acts)
      for (let t = a.start; t < a.end; t++)
        cells[t] = (t === a.start ? actionLabel(a) : a.kind.toLowerCase()).padEnd(width);
    return `stage ${s} | ${cells.join("")}`;
  });
  return [head, ...rows].join("\n");
}
