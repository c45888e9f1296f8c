import * as tf from "@tensorflow/tfjs";
import { BINARY, UNARY } from "../addon";
import { allFloat32, kernel } from "./common";

const MAX_RANK = 6;

/**
 * Output shape and per-operand strides (0 where an operand is broadcast), with neighbouring
 * axes merged wherever both operands walk them contiguously, so most ops become one flat loop.
 */
type Plan = { out: number[]; shape: Int32Array; as: Int32Array; bs: Int32Array };
const ONE = Int32Array.of(1);
const ZERO = Int32Array.of(0);
// The addon reads shapes synchronously, so one scratch array serves every flat call.
const FLAT = new Int32Array(1);
function flat(n: number): Int32Array {
  FLAT[0] = n;
  return FLAT;
}
function size(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function broadcastPlan(aShape: readonly number[], bShape: readonly number[]): Plan | null {
  // The common cases, without building strides: equal shapes, or a tensor with a scalar.
  const aSize = size(aShape);
  const bSize = size(bShape);
  if (sameShape(aShape, bShape)) return { out: [...aShape], shape: flat(aSize), as: ONE, bs: ONE };
  if (bSize === 1 && bShape.length <= aShape.length) return { out: [...aShape], shape: flat(aSize), as: ONE, bs: ZERO };
  if (aSize === 1 && aShape.length <= bShape.length) return { out: [...bShape], shape: flat(bSize), as: ZERO, bs: ONE };
  const out = tf.backend_util.assertAndGetBroadcastShape([...aShape], [...bShape]);
  const rank = out.length;
  const pad = (s: readonly number[]): number[] => [...new Array<number>(rank - s.length).fill(1), ...s];
  const a = pad(aShape);
  const b = pad(bShape);
  const strides = (s: number[]): number[] => {
    const st = new Array<number>(rank).fill(0);
    let acc = 1;
    for (let d = rank - 1; d >= 0; d--) {
      st[d] = s[d] === 1 && out[d] !== 1 ? 0 : acc;
      acc *= s[d]!;
    }
    return st;
  };
  const sa = strides(a);
  const sb = strides(b);
  const dims: number[] = [];
  const ma: number[] = [];
  const mb: number[] = [];
  for (let d = 0; d < rank; d++) {
    if (out[d] === 1) continue;
    const last = dims.length - 1;
    if (last >= 0 && ma[last] === sa[d]! * out[d]! && mb[last] === sb[d]! * out[d]!) {
      dims[last]! *= out[d]!;
      ma[last] = sa[d]!;
      mb[last] = sb[d]!;
    } else {
      dims.push(out[d]!);
      ma.push(sa[d]!);
      mb.push(sb[d]!);
    }
  }
  if (dims.length > MAX_RANK) return null;
  return { out, shape: Int32Array.from(dims), as: Int32Array.from(ma), bs: Int32Array.from(mb) };
}

function binaryKernel(name: keyof typeof BINARY) {
  const op = BINARY[name];
  return kernel(name, ({ inputs, backend }) => {
    const { a, b } = inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
    if (!allFloat32(a, b)) return null;
    const plan = broadcastPlan(a.shape, b.shape);
    if (!plan) return null;
    const out = backend.output(plan.out);
    backend.addon.binary(op, backend.values(a), backend.values(b), out.values, plan.shape, plan.as, plan.bs);
    return out.info;
  });
}

function unaryKernel(name: keyof typeof UNARY, params: (attrs: tf.NamedAttrMap) => [number, number] = () => [0, 0]) {
  const op = UNARY[name];
  return kernel(name, ({ inputs, backend, attrs }) => {
    const { x } = inputs as { x: tf.TensorInfo };
    if (!allFloat32(x)) return null;
    const out = backend.output([...x.shape]);
    const [p1, p2] = params(attrs);
    backend.addon.unary(op, backend.values(x), out.values, p1, p2);
    return out.info;
  });
}

export const elementwiseKernels: tf.KernelConfig[] = [
  ...(["Add", "Sub", "Multiply", "RealDiv", "Maximum", "Minimum", "SquaredDifference", "Pow"] as const).map(
    binaryKernel,
  ),
  ...(
    [
      "Relu",
      "Relu6",
      "Exp",
      "Log",
      "Neg",
      "Sqrt",
      "Rsqrt",
      "Square",
      "Sigmoid",
      "Tanh",
      "Abs",
      "Reciprocal",
      "Elu",
      "Softplus",
      "Log1p",
      "Expm1",
      "Sign",
      "Erf",
      "Floor",
    ] as const
  ).map((n) => unaryKernel(n)),
  unaryKernel("Step", (attrs) => [Number(attrs.alpha ?? 0), 0]),
  unaryKernel("LeakyRelu", (attrs) => [Number(attrs.alpha ?? 0.2), 0]),
  unaryKernel("ClipByValue", (attrs) => [Number(attrs.clipValueMin), Number(attrs.clipValueMax)]),
  kernel("AddN", ({ inputs, backend }) => {
    const list = Object.values(inputs) as tf.TensorInfo[];
    const shape = list[0]!.shape;
    if (
      !allFloat32(...list) ||
      list.some((t) => t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i]))
    )
      return null;
    const out = backend.output([...shape]);
    backend.addon.addN(
      list.map((t) => backend.values(t)),
      out.values,
    );
    return out.info;
  }),
];
