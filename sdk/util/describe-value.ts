/** Whether `v` looks like a TF.js tensor (any copy of TF.js: checked by shape, not by class). */
export function isTensor(v: unknown): v is { shape: number[]; dtype: string } {
  const t = v as { shape?: unknown; dtype?: unknown; dataSync?: unknown } | null;
  return (
    typeof v === "object" &&
    t !== null &&
    Array.isArray(t.shape) &&
    typeof t.dtype === "string" &&
    typeof t.dataSync === "function"
  );
}

/** A value as an error names it: "a tf.Tensor of shape [600,784] (float32)", "an array of 2 items", "a number". */
export function describeGiven(v: unknown): string {
  if (v === null) return "null";
  if (isTensor(v)) return `a tf.Tensor of shape [${v.shape.join(",")}] (${v.dtype})`;
  if (Array.isArray(v)) return `an array of ${v.length} item${v.length === 1 ? "" : "s"}`;
  if (typeof v !== "object") return typeof v === "undefined" ? "undefined" : `a ${typeof v}`;
  const name = (v as { constructor?: { name?: string } }).constructor?.name;
  if (name && name !== "Object") return `a ${name}`;
  const keys = Object.keys(v);
  return `an object with keys ${keys.slice(0, 8).join(", ") || "(none)"}${keys.length > 8 ? `, ... (${keys.length} in all)` : ""}`;
}
