import * as tf from "@tensorflow/tfjs";

let registered = false;

/**
 * Gradients TF.js computes by a loop of ops, replaced once in a worker (any backend): the
 * models that still train by autodiff (custom layers) run them every step.
 *
 * Tile: TF.js slices dy once per tile and adds the slices, which LayerNormalization (its gamma and
 * beta tiled to batch x sequence) and BatchNormalization's gradient turn into thousands of
 * kernels a step (a 2-block transformer: 11,529 Slice and 11,581 Add of its 24,087). Here it is one
 * reshape and one sum: dy's axis of reps x n is reps blocks of n.
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
            // One sum over every tiled axis at once: a GPU reduces each output over the rows it
            // sums in one pass, where an axis at a time would reduce many tiny rows first.
            const shape: number[] = [];
            const axes: number[] = [];
            reps.forEach((r, i) => {
              if (r > 1) (axes.push(shape.length), shape.push(r));
              shape.push(x!.shape[i]!);
            });
            return axes.length === 0 ? g.clone() : tf.sum(tf.reshape(g, shape), axes);
          }),
      };
    },
  });
}
