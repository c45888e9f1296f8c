import { loadAddon } from "./addon";

/**
 * Whether any value is NaN or Infinity, in one pass: the addon's exponent-bit scan for large
 * arrays, else a float64 sum (of float32 values it cannot overflow, so it is non-finite exactly
 * when an element is).
 */
export function hasNonFinite(data: Float32Array | Int32Array): boolean {
  if (data instanceof Int32Array) return false;
  // The native check reads exponent bits a vector at a time; a large gradient is checked every step.
  const load = data.length >= 4096 ? loadAddon() : null;
  if (load?.ok) return !load.addon.allFinite(data);
  let sum = 0;
  for (let i = 0; i < data.length; i++) sum += data[i]!;
  return !Number.isFinite(sum);
}
