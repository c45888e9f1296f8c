import * as fs from "node:fs";
import type { Json } from "./json";

/** How far a measure may fall below its last recorded row before the run says so. */
export const REGRESSION = 0.15;

/** Which rows of a result a run holds against the last recorded one, and by which measures (higher is better). */
export interface Watch {
  key(row: Json): string;
  measures: readonly string[];
  /** Rows of meshtrain's own numbers (a peer's slowing down is not a regression of ours). */
  include?(row: Json): boolean;
}

interface Recorded {
  machine?: { cpu?: string; isa?: string; cores?: number; date?: string };
  rows?: Json[];
}

/** A result's kind of CPU as both sides of a comparison must share it: model, vector instructions, cores. */
export const kindOf = (m: Recorded["machine"]): string => `${m?.cpu ?? "?"} (${m?.isa ?? "vector instructions not recorded"}), ${m?.cores ?? "?"} cores`;

/**
 * Sentences on what this run measured more than 15% below the last run recorded in `file`, when
 * both ran on the same kind of CPU (model, vector instructions, cores): a number from another
 * kind of machine is no yardstick (the README's tables came from an AVX2 VM, this round's from an
 * AVX-512 one, and the native data plane's ranking between them flipped). Empty when nothing fell.
 */
export function regressions(file: string, now: { machine: Json; rows: readonly Json[] }, watch: Watch): string[] {
  if (!fs.existsSync(file)) return [];
  let last: Recorded;
  try {
    last = JSON.parse(fs.readFileSync(file, "utf8")) as Recorded;
  } catch {
    return [];
  }
  const here = kindOf(now.machine as Recorded["machine"]);
  const there = kindOf(last.machine);
  if (here !== there) return [`Not held against the last recorded run: it ran on ${there}, this one on ${here}.`];
  const before = new Map((last.rows ?? []).filter((r) => watch.include?.(r) ?? true).map((r) => [watch.key(r), r]));
  const fell: string[] = [];
  for (const row of now.rows.filter((r) => watch.include?.(r) ?? true)) {
    const old = before.get(watch.key(row));
    if (!old) continue;
    for (const m of watch.measures) {
      const [a, b] = [old[m], row[m]];
      if (typeof a !== "number" || typeof b !== "number" || !(a > 0) || !Number.isFinite(b)) continue;
      if (b < a * (1 - REGRESSION)) fell.push(`${watch.key(row)}: ${m} ${b.toPrecision(3)}, was ${a.toPrecision(3)} (${Math.round((b / a - 1) * 100)}%)`);
    }
  }
  if (fell.length === 0) return [];
  const when = last.machine?.date ? ` of ${last.machine.date.slice(0, 10)}` : "";
  return [`**Regressed** by more than ${REGRESSION * 100}% against the last recorded run${when} on this kind of CPU (${here}): ${fell.join("; ")}.`];
}
