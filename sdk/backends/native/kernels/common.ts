import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND, type NativeBackend } from "../backend";

export type Inputs = tf.NamedTensorInfoMap;
export type Attrs = tf.NamedAttrMap;
type Args = { inputs: Inputs; backend: NativeBackend; attrs: Attrs };

/**
 * A native kernel: `run` returns null when it does not handle the case (an int32 input, an
 * unusual layout), and the stock cpu kernel runs instead. Every kernel is checked against the
 * stock one on random inputs in test/unit/native-kernels.test.ts.
 */
export function kernel(kernelName: string, run: (args: Args) => tf.TensorInfo | null): tf.KernelConfig {
  const stock = tf.getKernel(kernelName, "cpu");
  if (!stock) throw new Error(`TF.js has no cpu kernel "${kernelName}" to fall back to`);
  return {
    kernelName,
    backendName: NATIVE_BACKEND,
    kernelFunc: (params) => {
      const args = params as unknown as Args;
      return run(args) ?? (stock.kernelFunc(params) as tf.TensorInfo);
    },
  };
}

export function allFloat32(...ts: Array<tf.TensorInfo | undefined>): boolean {
  return ts.every((t) => t === undefined || t.dtype === "float32");
}

/** The activations fused ops accept, as native unary op codes. prelu needs weights: not native. */
export const ACTIVATION: Readonly<Record<string, number>> = {
  linear: 20,
  relu: 0,
  relu6: 1,
  elu: 14,
  sigmoid: 9,
  leakyrelu: 15,
};
