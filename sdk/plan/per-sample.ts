/** Elements of one sample of a tensor of `shape` (batch dimension first; unknown dimensions count 1). */
export function perSample(shape: ReadonlyArray<number | null>): number {
  return shape.slice(1).reduce<number>((a, d) => a * (d ?? 1), 1);
}
