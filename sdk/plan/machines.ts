/** A machine the workers run on: how many of them, and its cores. */
export interface Machine {
  readonly host: string;
  readonly workers: number;
  readonly cpus: number;
}

/**
 * The workers' machines, from what each said when it joined; workers that did not say are left
 * out. A machine's cores: the union of its workers' allowed cores where each said which (two
 * workers pinned to cores 0 and 1 have two), else the most any of them may use.
 */
export function machinesOf(
  devices: ReadonlyArray<{ host?: string; cpus?: number; cores?: readonly number[] }>,
): Machine[] {
  const perHost = new Map<string, { workers: number; cpus: number; cores: Set<number> | null }>();
  for (const d of devices) {
    if (d.host === undefined || !(d.cpus! > 0)) continue;
    const m = perHost.get(d.host) ?? { workers: 0, cpus: 0, cores: new Set<number>() };
    m.workers++;
    m.cpus = Math.max(m.cpus, d.cpus!);
    if (d.cores && m.cores) for (const c of d.cores) m.cores.add(c);
    else m.cores = null;
    perHost.set(d.host, m);
  }
  return [...perHost].map(([host, m]) => ({
    host,
    workers: m.workers,
    cpus: m.cores && m.cores.size > 0 ? m.cores.size : m.cpus,
  }));
}
