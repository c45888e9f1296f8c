import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND, type NativeBackend } from "../backends/native/backend";
import { NativeUpdate } from "./native-update";
import type { OptimizerSpec } from "../protocol/optimizer-spec";
import { TfjsUpdate, type UpdateRule } from "./tfjs-update";

/** The in-place native optimizer on the native backend; TF.js's optimizers everywhere else. */
export function makeUpdateRule(vars: readonly tf.Variable[], spec: OptimizerSpec): UpdateRule {
  if (tf.getBackend() === NATIVE_BACKEND) return new NativeUpdate(tf.backend() as NativeBackend, vars, spec);
  return new TfjsUpdate(vars, spec);
}
