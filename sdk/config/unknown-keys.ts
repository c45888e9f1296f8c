import type { z } from "zod";

/** A schema's parts as zod 4 keeps them: an object's shape, a wrapper's inner type. */
interface SchemaParts {
  shape?: Record<string, SchemaParts>;
  def?: { innerType?: SchemaParts; in?: SchemaParts; out?: SchemaParts };
}

/** The object schema at `path` inside `schema`, through optional, default and pipe wrappers; null where there is none. */
function objectAt(schema: SchemaParts, path: readonly PropertyKey[]): Record<string, SchemaParts> | null {
  let s: SchemaParts | undefined = schema;
  for (let i = 0; i <= path.length && s; i++) {
    for (let hops = 0; s && !s.shape && hops < 8; hops++) s = s.def?.innerType ?? s.def?.in ?? s.def?.out;
    if (i === path.length) return s?.shape ?? null;
    s = s?.shape?.[String(path[i])];
  }
  return null;
}

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(
        row[j]! + 1,
        row[j - 1]! + 1,
        diagonal + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1),
      );
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/** The valid key nearest to `key`, where it is near enough to be a typo. */
export function closestKey(key: string, valid: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const v of valid) {
    const d = distance(key, v);
    if (d < bestDistance) [best, bestDistance] = [v, d];
  }
  return best !== null && bestDistance <= Math.max(2, Math.floor(best.length / 3)) ? best : null;
}

/** How many unknown keys a message names before it counts the rest: a tensor or a model passed as options has hundreds. */
const NAMED_KEYS = 5;

/**
 * Unknown keys in words: each key with the nearest valid one, then every valid one at that
 * place, once ('"compresion" is not an option (did you mean "compression"?); the options are
 * ...'); null for other issues. Past NAMED_KEYS keys the rest are counted, not named.
 */
export function unknownKeysLine(schema: z.ZodType, issue: z.core.$ZodIssue): string | null {
  if (issue.code !== "unrecognized_keys") return null;
  const shape = objectAt(schema as unknown as SchemaParts, issue.path);
  const valid = shape ? Object.keys(shape) : [];
  const where = issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  const guess = (k: string): string => {
    const near = closestKey(k, valid);
    return near ? ` (did you mean "${near}"?)` : "";
  };
  const named = issue.keys.slice(0, NAMED_KEYS).map((k) => `"${k}"${guess(k)}`);
  const rest = issue.keys.length - named.length;
  const keys =
    issue.keys.length === 1
      ? `"${issue.keys[0]}" is not an option${guess(issue.keys[0]!)}`
      : `${named.join(", ")}${rest > 0 ? ` and ${rest} more keys` : ""} are not options`;
  const list = valid.length > 0 ? `; the options are ${valid.join(", ")}` : "";
  return `${where}${keys}${list}`;
}
