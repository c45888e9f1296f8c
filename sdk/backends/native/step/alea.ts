/**
 * The state seedrandom's Alea starts from for a seed string (its Mash hash), as tf.randomUniform
 * seeds it: the C kernel (native/src/rng.c) then draws the same numbers TF.js draws. Returns
 * [s0, s1, s2, c].
 */
export function aleaState(seed: string): Float64Array {
  let n = 0xefc8249d;
  const mash = (data: string): number => {
    for (let i = 0; i < data.length; i++) {
      n += data.charCodeAt(i);
      let h = 0.02519603282416938 * n;
      n = h >>> 0;
      h -= n;
      h *= n;
      n = h >>> 0;
      h -= n;
      n += h * 0x100000000;
    }
    return (n >>> 0) * 2.3283064365386963e-10;
  };
  let s0 = mash(" ");
  let s1 = mash(" ");
  let s2 = mash(" ");
  s0 -= mash(seed);
  if (s0 < 0) s0 += 1;
  s1 -= mash(seed);
  if (s1 < 0) s1 += 1;
  s2 -= mash(seed);
  if (s2 < 0) s2 += 1;
  return Float64Array.of(s0, s1, s2, 1);
}

/** A fresh draw's seed as tf.randomUniform makes it: the layer's seed, else Math.random(), as a string. */
export function drawSeed(seed: unknown): string {
  return String(seed === undefined || seed === null ? Math.random() : seed);
}
