import { ConfigError } from "../errors/errors";

const UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
  k: 2 ** 10,
  m: 2 ** 20,
  g: 2 ** 30,
};

/** "256MB", "1.5GiB", "512m" or a number of bytes, as bytes. */
export function parseBytes(v: string | number): number {
  if (typeof v === "number") {
    if (Number.isInteger(v) && v >= 2 ** 20) return v;
    throw new ConfigError(`memory(${v}) must be a whole number of bytes of at least 1 MiB`, {
      hint: 'or give a size like "256MB"',
    });
  }
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(v);
  const unit = UNITS[(m?.[2] || "b").toLowerCase()];
  if (!m || unit === undefined) {
    throw new ConfigError(`memory("${v}") is not a size`, { hint: 'write it like "256MB", "1.5GiB" or "512MiB"' });
  }
  const bytes = Math.round(Number(m[1]) * unit);
  if (bytes < 2 ** 20) throw new ConfigError(`memory("${v}") is ${bytes} bytes; at least 1 MiB is needed`);
  return bytes;
}
