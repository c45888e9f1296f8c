import { ACT, type NativeAddon } from "../addon";

/** The activations a compiled step computes (tfjs-layers' names), and softmax, which works on rows. */
export type StepActivation = keyof typeof ACT | "softmax";

const NAMES: Readonly<Record<string, StepActivation>> = {
  linear: "linear",
  relu: "relu",
  relu6: "relu6",
  sigmoid: "sigmoid",
  tanh: "tanh",
  hardSigmoid: "hardSigmoid",
  elu: "elu",
  selu: "selu",
  softplus: "softplus",
  softsign: "softsign",
  gelu: "gelu",
  gelu_new: "gelu_new",
  swish: "swish",
  mish: "mish",
  softmax: "softmax",
};

/** A layer config's activation as a step activation, or null for one the step does not compute (logSoftmax, a custom one). */
export function stepActivation(name: unknown): StepActivation | null {
  if (name === undefined || name === null) return "linear";
  return typeof name === "string" ? (NAMES[name] ?? null) : null;
}

/** Whether the gradient needs the activation's input (else its output gives it, and it can run in place). */
export function needsInput(act: StepActivation): boolean {
  return !(
    act === "linear" ||
    act === "relu" ||
    act === "relu6" ||
    act === "sigmoid" ||
    act === "tanh" ||
    act === "elu" ||
    act === "softmax"
  );
}

/** The parameter tfjs-layers' activation functions use when a layer names them (swish's beta is 1). */
function defaultAlpha(act: StepActivation): number {
  return act === "swish" ? 1 : 0;
}

/** y = act(x) over rows of `cols` (softmax per row); y may be x. */
export function activate(
  addon: NativeAddon,
  act: StepActivation,
  x: Float32Array,
  y: Float32Array,
  cols: number,
  alpha = defaultAlpha(act),
): void {
  if (act === "softmax") return addon.softmaxAxis(x, y, x.length / cols, cols, 1);
  addon.actForward(ACT[act], x, y, alpha);
}

/** dx (+)= dL/dx from dy, the input x (where needed) and the output y; dx may be dy when not adding. */
export function activateBackward(
  addon: NativeAddon,
  act: StepActivation,
  dy: Float32Array,
  x: Float32Array | null,
  y: Float32Array,
  dx: Float32Array,
  cols: number,
  add: boolean,
  alpha = defaultAlpha(act),
): void {
  if (act === "softmax") return addon.softmaxAxisBackward(y, dy, dx, y.length / cols, cols, 1, add ? 1 : 0);
  addon.actBackward(ACT[act], dy, x, y, dx, alpha, add ? 1 : 0);
}
