/** What moving a message through a process costs its CPU, ms: per message (a request and its answer), and per MB (1e6 bytes) more. */
export interface HandlingCost {
  messageMs: number;
  msPerMB: number;
}

/** What `messages` messages carrying `bytes` in all cost a process's CPU, ms. */
export function handlingMs(h: HandlingCost, messages: number, bytes: number): number {
  return h.messageMs * messages + (h.msPerMB * bytes) / 1e6;
}

/** Where a member of the job runs, and what moving a message through it costs its CPU (from the link probes). */
export interface Seat {
  /** Its machine, where it said; one that did not is a machine of its own. */
  host?: string;
  cpus?: number;
  /** The cores it may run on, where it said; else any of its machine's. */
  cores?: readonly number[];
  handling?: HandlingCost;
}

/** A process of the job: where it may run, and the CPU time it spends in one round of the job's work. */
export interface CoreUser extends Omit<Seat, "handling"> {
  busyMs: number;
  /** Who it is, for the plan's words. */
  name: string;
}

/** The busiest core's CPU time in one round, and who runs on it. */
export interface CoreLoad {
  ms: number;
  names: string[];
}

/**
 * No round of the job is shorter than the CPU time its busiest core must give: each process's
 * time is spread evenly over the cores it may run on and summed per core of each machine.
 * Processes pinned to one core each on their own cores add nothing a step does not already
 * take; a parameter server pinned beside a worker puts both their work on one core, which the
 * links' own speeds do not show (they were measured one process at a time).
 */
export function busiestCore(users: readonly CoreUser[]): CoreLoad {
  const perCore = new Map<string, CoreLoad>();
  users.forEach((u, i) => {
    const machine = u.host ?? `#${i}`;
    const cores =
      u.cores && u.cores.length > 0 ? u.cores : Array.from({ length: Math.max(1, u.cpus ?? 1) }, (_, c) => c);
    for (const c of cores) {
      const key = `${machine}/${c}`;
      const load = perCore.get(key) ?? { ms: 0, names: [] };
      load.ms += u.busyMs / cores.length;
      load.names.push(u.name);
      perCore.set(key, load);
    }
  });
  return [...perCore.values()].reduce((a, b) => (b.ms > a.ms ? b : a), { ms: 0, names: [] });
}
