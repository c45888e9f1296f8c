import * as tf from "@tensorflow/tfjs";
import { tensorsFromFlat } from "../compute/device-io";

const ROUNDS = 5;
const ROUND_MS = 12;

/**
 * What the planner needs to predict step times on this worker, measured on its backend when it
 * joins (about 100 ms): matrix-multiply speed, and the fixed cost TF.js pays for every kernel.
 * Workers join together and share cores while they start, so each is the best of a few short
 * rounds: the undisturbed speed, not whatever a neighbour's start-up left of it.
 */
export async function calibrate(): Promise<{ gflops: number; kernelOverheadUs: number }> {
  const n = 128;
  const a = tf.randomNormal([n, n]);
  const b = tf.randomNormal([n, n]);
  const small = tf.ones([4]);
  // The product is read (so lazy backends compute it) but not returned: tidy would walk the array.
  const multiply = async (): Promise<void> => {
    const c = tf.matMul(a, b);
    await c.data();
    c.dispose();
  };
  const adds = async (count: number): Promise<void> => {
    const last = tf.tidy(() => {
      let r = tf.add(small, small);
      for (let i = 1; i < count; i++) r = tf.add(r, small);
      return r;
    });
    await last.data();
    last.dispose();
  };
  try {
    await multiply();
    await adds(20);
    let gflops = 0;
    let kernelOverheadUs = Infinity;
    for (let round = 0; round < ROUNDS; round++) {
      let reps = 0;
      const t0 = performance.now();
      while (performance.now() - t0 < ROUND_MS) {
        await multiply();
        reps++;
      }
      gflops = Math.max(gflops, (2 * n ** 3 * reps) / ((performance.now() - t0) / 1000) / 1e9);
      const ops = 100;
      const t1 = performance.now();
      await adds(ops);
      kernelOverheadUs = Math.min(kernelOverheadUs, ((performance.now() - t1) * 1000) / ops);
    }
    return { gflops, kernelOverheadUs };
  } finally {
    tf.dispose([a, b, small]);
  }
}

/**
 * A GPU worker's host-device transfer rate: 4 MiB uploaded and read back, best of three, the
 * slower direction (a data-parallel step moves its gradient both ways once), bytes/s.
 */
export async function transferRate(): Promise<number> {
  const bytes = 4 * 2 ** 20;
  const host = new Float32Array(bytes / 4);
  let up = 0;
  let down = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const [t] = tensorsFromFlat(host, [[host.length]]);
    const tiny = tf.tidy(() => t!.slice(0, 1));
    await tiny.data();
    const t1 = performance.now();
    await t!.data();
    const t2 = performance.now();
    tf.dispose([t!, tiny]);
    up = Math.max(up, bytes / ((t1 - t0) / 1000));
    down = Math.max(down, bytes / ((t2 - t1) / 1000));
  }
  return Math.min(up, down);
}
