import { InvalidArgumentError } from "commander";

/** A whole number >= min, as a flag's value. */
export function int(min: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min)
      throw new InvalidArgumentError(`expected a whole number >= ${min}, got "${v}"`);
    return n;
  };
}

/** A positive finite number, as a flag's value. */
export function positive(v: string): number {
  const n = Number(v);
  if (!(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError(`expected a positive number, got "${v}"`);
  return n;
}

/** A comma-separated list of some of `allowed`, as a flag's value ("native,wasm"). */
export function listOf<T extends string>(allowed: readonly T[]): (v: string) => T[] {
  return (v) => {
    const items = v
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
    const wrong = items.filter((s) => !(allowed as readonly string[]).includes(s));
    if (items.length === 0 || wrong.length > 0)
      throw new InvalidArgumentError(
        `expected a comma-separated list of ${allowed.join(", ")}${wrong.length > 0 ? `; "${wrong.join('", "')}" is not one` : ""}`,
      );
    return [...new Set(items)] as T[];
  };
}
