import { PowerSgd } from "../power-sgd";
import { aloneSum } from "../../profile-replica";

/**
 * PowerSGD's own work in one step at `rank` on gradients of these shapes, as a replica does it with no peers (a ring of one
 * returns each sum as it is): M = gradient + error, P = M Q, P orthonormalized, Q = M^T P, the
 * error M - P Q^T and the approximation. On the 11.4M MLP at rank 4 this took about as long as
 * the step's forward and backward, which plans that priced only PowerSGD's bytes left out.
 */
export async function timePowerSgd(
  shapes: ReadonlyArray<readonly number[]>,
  rank: number,
  time: (run: () => Promise<void>) => Promise<number>,
): Promise<number> {
  const n = shapes.reduce((a, s) => a + s.reduce((x, d) => x * d, 1), 0);
  const power = new PowerSgd(shapes, rank);
  // Values of a gradient's size: the work does not depend on them.
  const flat = Float32Array.from({ length: n }, (_, i) => Math.sin(i) * 1e-3);
  const step = async (): Promise<void> => {
    await power.allReduce(flat, n, aloneSum);
    power.commit();
  };
  // Once first, whatever the profile's budget: the first step allocates and first touches the
  // error and scratch buffers (the gradient's size each), which a fit pays once, not every step.
  await step();
  return time(step);
}
