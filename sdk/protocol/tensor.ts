import { z } from "zod";

/** Element types that travel as binary frames. Both are 4 bytes, little-endian. */
export const DTYPES = ["float32", "int32"] as const;
export type DType = (typeof DTYPES)[number];

/** A tensor's values as they travel: float32 or int32, little-endian. */
export type TensorData = Float32Array | Int32Array;

/** A tensor as it travels: flat data plus its shape. */
export interface Tensorlike {
  data: TensorData;
  shape: readonly number[];
}

export const TensorSpecSchema = z.object({
  dtype: z.enum(DTYPES),
  shape: z
    .array(
      z
        .number()
        .int()
        .nonnegative()
        .max(2 ** 31),
    )
    .max(8),
});
export type TensorSpec = z.infer<typeof TensorSpecSchema>;

export const DTYPE_CODE: Readonly<Record<DType, number>> = { float32: 1, int32: 2 };
export const CODE_DTYPE: Readonly<Record<number, DType>> = { 1: "float32", 2: "int32" };

export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function allocate(dtype: DType, length: number): TensorData {
  return dtype === "float32" ? new Float32Array(length) : new Int32Array(length);
}

export function dtypeOf(data: TensorData): DType {
  return data instanceof Int32Array ? "int32" : "float32";
}

/** Samples [start, end) of a batch-first tensor, sharing its memory. */
export function rowsOf(t: Tensorlike, start: number, end: number): Tensorlike {
  const per = elementCount(t.shape.slice(1));
  return { data: t.data.subarray(start * per, end * per), shape: [end - start, ...t.shape.slice(1)] };
}
