import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND, type NativeBackend } from "../backends/native/backend";
import { NativeUpdate, type NativeOptimizerSpec } from "./native-update";
import { updatesInPlace, type OptimizerSpec } from "../protocol/optimizer-spec";
import { TfjsUpdate, type UpdateRule } from "./tfjs-update";

/** The in-place native optimizer on the native backend for the optimizers it has kernels for; TF.js's optimizers everywhere else. */
export function makeUpdateRule(vars: readonly tf.Variable[], spec: OptimizerSpec): UpdateRule {
  if (tf.getBackend() === NATIVE_BACKEND && hasNativeKernel(spec))
    return new NativeUpdate(tf.backend() as NativeBackend, vars, spec);
  return new TfjsUpdate(vars, spec);
}

/** Adagrad, Adadelta and Adamax run as TF.js's own optimizers, on the native backend's kernels. */
export function hasNativeKernel(spec: OptimizerSpec): spec is NativeOptimizerSpec {
  return updatesInPlace(spec);
}
