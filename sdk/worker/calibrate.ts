import * as tf from "@tensorflow/tfjs";

/**
 * What the planner needs to predict step times on this worker, measured on its backend when it
 * joins (about 50 ms): matrix-multiply speed, and the fixed cost TF.js pays for every kernel.
 */
export function calibrate(): { gflops: number; kernelOverheadUs: number } {
  const n = 128;
  const a = tf.randomNormal([n, n]);
  const b = tf.randomNormal([n, n]);
  const small = tf.ones([4]);
  try {
    tf.tidy(() => tf.matMul(a, b).dataSync());
    let reps = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < 30) {
      tf.tidy(() => tf.matMul(a, b).dataSync());
      reps++;
    }
    const gflops = (2 * n ** 3 * reps) / ((performance.now() - t0) / 1000) / 1e9;
    const ops = 200;
    tf.tidy(() => {
      for (let i = 0; i < 20; i++) tf.add(small, small);
    });
    const t1 = performance.now();
    tf.tidy(() => {
      for (let i = 0; i < ops; i++) tf.add(small, small);
    });
    const kernelOverheadUs = ((performance.now() - t1) * 1000) / ops;
    return { gflops, kernelOverheadUs };
  } finally {
    tf.dispose([a, b, small]);
  }
}
