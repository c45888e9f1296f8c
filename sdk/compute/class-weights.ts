import * as tf from "@tensorflow/tfjs";

/**
 * A loss that weighs each sample's loss by its class's weight (fit option classWeight), as
 * model.fit does: the class is the label's argmax (one-hot) or the label itself (class ids), and
 * the batch's loss is then the mean of weight x loss. `table[c]` is class c's weight; the driver
 * checked every class in the data has one.
 */
export function classWeighted(
  loss: (y: tf.Tensor, out: tf.Tensor) => tf.Tensor,
  table: readonly number[],
): (y: tf.Tensor, out: tf.Tensor) => tf.Tensor {
  const weights = Float32Array.from(table);
  // The table is made in each call's scope: a tensor kept across calls would outlive the model.
  return (y, out) =>
    tf.tidy(() => {
      const rows = y.shape[0]!;
      const ids = y.rank === 2 && y.shape[1]! > 1 ? tf.argMax(y, 1) : tf.cast(tf.reshape(y, [rows]), "int32");
      return tf.mul(loss(y, out), tf.gather(tf.tensor1d(weights, "float32"), ids));
    });
}
