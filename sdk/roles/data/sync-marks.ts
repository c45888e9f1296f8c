import { StateError } from "../../errors/errors";
import type { OptimizerState, UpdateRule } from "../../compute/tfjs-update";

/** A replica of an elastic local-SGD fit as it stood right after a sync. */
export interface SyncMark {
  /** Steps this replica had taken since it was loaded. */
  taken: number;
  weights: Float32Array;
  model: Float32Array;
  inner: OptimizerState;
  outer: OptimizerState;
}

/**
 * The last two syncs of an elastic local-SGD replica. A lost worker sends the survivors back to
 * the last sync they all completed: each survivor's own is the last, or, where a peer died
 * between their sync all-reduces finishing, the one before (a sync is collective, so nobody is
 * further behind).
 */
export class SyncMarks {
  private last: SyncMark | null = null;
  private previous: SyncMark | null = null;

  constructor(
    private readonly inner: UpdateRule,
    private readonly outer: UpdateRule,
  ) {}

  /** Keeps the state right after a sync (or the load); copies, as the steps after it update weights and slots in place. */
  async mark(taken: number, weights: Float32Array, model: Float32Array): Promise<void> {
    this.previous = this.last;
    this.last = {
      taken,
      weights: weights.slice(),
      model: model.slice(),
      inner: await this.inner.exportState(),
      outer: await this.outer.exportState(),
    };
  }

  /** The mark `to` steps names: the last sync's (`"last"`) or the one before. */
  at(to: number | "last"): SyncMark {
    const m = to === "last" || to === this.last?.taken ? this.last : to === this.previous?.taken ? this.previous : null;
    if (!m) {
      const kept = [this.previous, this.last].flatMap((x) => (x ? [x.taken] : []));
      throw new StateError(
        `cannot go back to ${to} steps taken: the syncs kept are at ${kept.join(" and ") || "none"}`,
      );
    }
    return m;
  }

  /** Both optimizers back to a mark's (from copies: the mark may be gone back to again). */
  async restore(m: SyncMark): Promise<void> {
    await this.inner.importState(copied(m.inner));
    await this.outer.importState(copied(m.outer));
    if (m === this.last) return;
    // Back past the last sync: it no longer happened.
    this.last = this.previous;
    this.previous = null;
  }
}

function copied(s: OptimizerState): OptimizerState {
  return {
    format: s.format,
    tensors: s.tensors.map((t) => ({ name: t.name, data: t.data.slice(), shape: [...t.shape] })),
    scalars: { ...s.scalars },
  };
}

const OUTER = "outer:";

/** A local-SGD replica's optimizer state for a joining worker: its inner optimizer's, then the outer's, named apart. */
export function withOuter(inner: OptimizerState, outer: OptimizerState): OptimizerState {
  return {
    format: inner.format,
    tensors: [...inner.tensors, ...outer.tensors.map((t) => ({ ...t, name: OUTER + t.name }))],
    scalars: {
      ...inner.scalars,
      ...Object.fromEntries(Object.entries(outer.scalars).map(([k, v]) => [OUTER + k, v])),
      [`${OUTER}format-tfjs`]: outer.format === "tfjs" ? 1 : 0,
    },
  };
}

/** The inverse of withOuter. */
export function splitOuter(state: OptimizerState): { inner: OptimizerState; outer: OptimizerState } {
  const part = (outer: boolean): OptimizerState => ({
    format: outer ? (state.scalars[`${OUTER}format-tfjs`] === 1 ? "tfjs" : "native") : state.format,
    tensors: state.tensors
      .filter((t) => t.name.startsWith(OUTER) === outer)
      .map((t) => (outer ? { ...t, name: t.name.slice(OUTER.length) } : t)),
    scalars: Object.fromEntries(
      Object.entries(state.scalars)
        .filter(([k]) => k.startsWith(OUTER) === outer && k !== `${OUTER}format-tfjs`)
        .map(([k, v]) => [outer ? k.slice(OUTER.length) : k, v]),
    ),
  });
  return { inner: part(false), outer: part(true) };
}
