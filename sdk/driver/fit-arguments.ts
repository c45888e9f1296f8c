import { ConfigError, DataError, ModelError } from "../errors/errors";

const FROM_TENSORS =
  "to train on tensors x and y, wrap them: cluster.fit(model, datasets.fromTensors(x, y), { epochs, batchSize })";

/** Whether `v` looks like a TF.js tensor (any copy of TF.js: checked by shape, not by class). */
function isTensor(v: unknown): v is { shape: number[]; dtype: string } {
  const t = v as { shape?: unknown; dtype?: unknown; dataSync?: unknown } | null;
  return (
    typeof v === "object" &&
    t !== null &&
    Array.isArray(t.shape) &&
    typeof t.dtype === "string" &&
    typeof t.dataSync === "function"
  );
}

/** A value as an error names it: "a tf.Tensor of shape [600,784] (float32)", "an array of 2 items", "a number". */
export function describeGiven(v: unknown): string {
  if (v === null) return "null";
  if (isTensor(v)) return `a tf.Tensor of shape [${v.shape.join(",")}] (${v.dtype})`;
  if (Array.isArray(v)) return `an array of ${v.length} item${v.length === 1 ? "" : "s"}`;
  if (typeof v !== "object") return typeof v === "undefined" ? "undefined" : `a ${typeof v}`;
  const name = (v as { constructor?: { name?: string } }).constructor?.name;
  if (name && name !== "Object") return `a ${name}`;
  const keys = Object.keys(v);
  return `an object with keys ${keys.slice(0, 8).join(", ") || "(none)"}${keys.length > 8 ? `, ... (${keys.length} in all)` : ""}`;
}

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
