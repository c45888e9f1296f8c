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
