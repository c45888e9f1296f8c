
/** A machine the workers run on: how many of them, and its cores. */
export interface Machine {
  readonly host: string;
  readonly workers: number;
  readonly cpus: number;
}

/** The workers' machines, from what each said when it joined; workers that did not say are left out. */
export function machinesOf(devices: ReadonlyArray<{ host?: string; cpus?: number }>): Machine[] {
  const perHost = new Map<string, { host: string; workers: number; cpus: number }>();
  for (const d of devices) {
    if (d.host === undefined || !(d.cpus! > 0)) continue;
    const m = perHost.get(d.host) ?? { host: d.host, workers: 0, cpus: d.cpus! };
    m.workers++;
    perHost.set(d.host, m);
  }
  return [...perHost.values()];
}
