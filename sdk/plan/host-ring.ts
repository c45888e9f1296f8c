/**
 * The data ring's order where several workers share a machine: each machine's workers made
 * neighbours (machines in order of their lowest rank, ranks in order within one), so the ring
 * crosses between machines once each way per machine, as NCCL orders its rings by node. Where
 * ranks already come machine by machine (ssh's workersPerHost, Slurm's block distribution) this
 * is rank order; where they arrived interleaved (join by arrival, cyclic distributions) it is not.
 */
export interface HostRing {
  /** Ranks in ring order. */
  order: number[];
  /** What the plan says about the order, when machines are shared. */
  note: string | null;
}

export function hostRing(hosts: ReadonlyArray<string | undefined>): HostRing {
  const n = hosts.length;
  const identity = Array.from({ length: n }, (_, r) => r);
  if (hosts.some((h) => h === undefined)) return { order: identity, note: null };
  const byHost = new Map<string, number[]>();
  hosts.forEach((h, r) => byHost.set(h!, [...(byHost.get(h!) ?? []), r]));
  if (byHost.size === n || byHost.size === 1) return { order: identity, note: null };
  const order = [...byHost.values()].flat();
  const crossings = (ring: readonly number[]): number =>
    ring.filter((r, i) => hosts[r] !== hosts[ring[(i + 1) % n]!]).length;
  const machines = [...byHost].map(([h, ranks]) => `${h}: ${ranks.join(", ")}`).join("; ");
  const changed = order.some((r, i) => r !== i);
  return {
    order,
    note: changed
      ? `ring ordered by machine (${machines}): ${crossings(order)} hops between machines instead of ${crossings(identity)} in rank order; each machine's workers are neighbours`
      : `ring in rank order, which already keeps each machine's workers together (${machines}): ${crossings(order)} hops between machines`,
  };
}
