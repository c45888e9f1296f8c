import { UNARY, type NativeAddon } from "../addon";
import { ACTIVATION } from "../kernels/common";

/** The activations a compiled step computes itself; any other makes the model fall back to autodiff. */
export const STEP_ACTIVATIONS = ["linear", "relu", "sigmoid", "tanh", "softmax"] as const;
export type StepActivation = (typeof STEP_ACTIVATIONS)[number];

export function isStepActivation(name: unknown): name is StepActivation {
  return typeof name === "string" && (STEP_ACTIVATIONS as readonly string[]).includes(name);
}

/**
 * out = act(out + bias), in place, over rows of `cols` values: the same float32 operations, in
 * the same order, as the layer's unfused path (add the bias, then the activation).
 */
export function biasThenActivate(addon: NativeAddon, out: Float32Array, bias: Float32Array | null, rows: number, cols: number, act: StepActivation): void {
  if (act === "softmax" || act === "tanh") {
    addon.biasActivation(out, bias, rows, cols, ACTIVATION.linear!, 0);
    if (act === "softmax") addon.softmax(out, out, rows, cols);
    else addon.unary(UNARY.Tanh, out, out, 0, 0);
    return;
  }
  addon.biasActivation(out, bias, rows, cols, ACTIVATION[act]!, 0);
}

/**
 * dy := dL/d(pre-activation), in place, from dL/d(activation) and the activation's output y,
 * as TF.js's gradients compute it.
 */
export function activationBackward(addon: NativeAddon, dy: Float32Array, y: Float32Array, rows: number, cols: number, act: StepActivation): void {
  switch (act) {
    case "linear":
      return;
    case "relu":
      addon.reluGrad(dy, y, dy);
      return;
    case "sigmoid":
      for (let i = 0; i < dy.length; i++) dy[i] = Math.fround(dy[i]! * Math.fround(y[i]! * Math.fround(1 - y[i]!)));
      return;
    case "tanh":
      for (let i = 0; i < dy.length; i++) dy[i] = Math.fround(dy[i]! * Math.fround(1 - Math.fround(y[i]! * y[i]!)));
      return;
    case "softmax":
      // dx = y*dy - sum(y*dy) * y, per row
      for (let r = 0; r < rows; r++) {
        const o = r * cols;
        let s = 0;
        for (let c = 0; c < cols; c++) s += Math.fround(dy[o + c]! * y[o + c]!);
        const sf = Math.fround(s);
        for (let c = 0; c < cols; c++) dy[o + c] = Math.fround(Math.fround(dy[o + c]! * y[o + c]!) - Math.fround(sf * y[o + c]!));
      }
      return;
  }
}
