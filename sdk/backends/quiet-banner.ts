import * as tf from "@tensorflow/tfjs";

/**
 * TF.js's cpu backend prints "Hi, looks like you are running TensorFlow.js in Node.js ...
 * install our node backend" on its first tensor. With meshtrain the driver only builds models
 * and the workers run the backend meshtrain chose (and say which in their notes), so the advice
 * is noise in every cell and script: the banner is marked as already shown.
 */
export function quietCpuBanner(): void {
  try {
    const cpu = tf.findBackend("cpu") as { firstUse?: boolean } | null;
    if (cpu && "firstUse" in cpu) cpu.firstUse = false;
  } catch {
    // No cpu backend registered: nothing would print the banner either.
  }
}
