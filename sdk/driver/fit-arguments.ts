import { ConfigError, DataError, ModelError } from "../errors/errors";
import { describeGiven, isTensor } from "../util/describe-value";

const FROM_TENSORS =
  "to train on tensors x and y, wrap them: cluster.fit(model, datasets.fromTensors(x, y), { epochs, batchSize })";

/**
 * fit(model, dataset, options) called with something else in a place, as plain JavaScript and
 * notebook cells can (the common one: `fit(model, x, y)` as model.fit is called). Said before
 * anything reads the arguments: read as options, a tensor named each of its hundreds of
 * properties as an unknown option.
 */
export function checkFitArguments(model: unknown, dataset: unknown, options: unknown): void {
  const m = model as { layers?: unknown; getWeights?: unknown } | null;
  if (typeof model !== "object" || m === null || !Array.isArray(m.layers) || typeof m.getWeights !== "function") {
    throw new ModelError(`fit's first argument is ${describeGiven(model)}, not a tf.LayersModel`, {
      hint: "pass a model made with tf.sequential() or tf.model(): cluster.fit(model, dataset, options)",
    });
  }
  if (isTensor(dataset)) {
    throw new DataError(`fit's second argument is ${describeGiven(dataset)}: fit takes (model, dataset, options)`, {
      hint: FROM_TENSORS,
    });
  }
  const plain = typeof options === "object" && options !== null && !Array.isArray(options) && !isTensor(options);
  if (options !== undefined && !plain) {
    throw new ConfigError(
      `fit's third argument, its options, is ${describeGiven(options)}: fit takes (model, dataset, options)`,
      {
        hint: `the options are an object such as { epochs: 1, batchSize: 64 }; ${FROM_TENSORS}`,
      },
    );
  }
}
