import * as tf from "@tensorflow/tfjs";

let registered = false;

/**
 * Gradients TF.js computes by a loop of ops, replaced once in a worker (any backend): the
 * models that still train by autodiff (custom layers) run them every step.
 *
 * Tile: TF.js slices dy once per tile and adds the slices, which LayerNormalization (its gamma and
 * beta tiled to batch x sequence) and BatchNormalization's gradient turn into thousands of
 * kernels a step (a 2-block transformer: 11,529 Slice and 11,581 Add of its 24,087). Here each
 * tiled axis is one reshape and one sum: dy's axis of reps x n is reps blocks of n.
 */
export function registerGradients(): void {
  if (registered) return;
  registered = true;
  tf.registerGradient({
    kernelName: "Tile",
    inputsToSave: ["x"],
    gradFunc: (dy, saved, attrs) => {
      const [x] = saved as tf.Tensor[];
      const reps = (attrs as { reps: number[] }).reps;
      const g = dy as tf.Tensor;
      return {
        x: () =>
          tf.tidy(() => {
            let sum = g;
            reps.forEach((r, i) => {
              if (r <= 1) return;
              const s = sum.shape;
              sum = tf.sum(tf.reshape(sum, [...s.slice(0, i), r, x!.shape[i]!, ...s.slice(i + 1)]), i);
            });
            return sum === g ? g.clone() : sum;
          }),
      };
    },
  });
}
