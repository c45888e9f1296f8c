/**
 * Which workers talk to which, as data: all-reduce groups (each rank in exactly one group, a
 * singleton needs no links) and pipeline neighbours. Strategies say what they need; the cluster
 * connects it (and keeps it while it stays the same).
 */
export interface Wiring {
  /** All-reduce groups, each in ring order. */
  groups: number[][];
  /** pipe[rank]: the ranks of the stages before and after it. */
  pipe: Array<{ prev: number | null; next: number | null }>;
  /** Every worker dials every parameter server. */
  servers?: true;
}

export function wiringKey(w: Wiring): string {
  return JSON.stringify(w);
}

/** Data parallelism: one ring of every rank, no pipeline. */
export function dataWiring(ring: readonly number[]): Wiring {
  return { groups: [[...ring]], pipe: Array.from({ length: ring.length }, () => ({ prev: null, next: null })) };
}

/** R replicas x S stages, rank = r * S + s: each replica a pipeline, each stage's replicas a ring. */
export function gridWiring(replicas: number, stages: number): Wiring {
  const rank = (r: number, s: number): number => r * stages + s;
  return {
    groups: Array.from({ length: stages }, (_, s) => Array.from({ length: replicas }, (_, r) => rank(r, s))),
    pipe: Array.from({ length: replicas * stages }, (_, k) => {
      const s = k % stages;
      const r = Math.floor(k / stages);
      return { prev: s > 0 ? rank(r, s - 1) : null, next: s < stages - 1 ? rank(r, s + 1) : null };
    }),
  };
}

/** Parameter servers: no links between workers; each worker links to every server. */
export function serverWiring(n: number): Wiring {
  return {
    groups: Array.from({ length: n }, (_, r) => [r]),
    pipe: Array.from({ length: n }, () => ({ prev: null, next: null })),
    servers: true,
  };
}
