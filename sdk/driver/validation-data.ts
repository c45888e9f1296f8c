import { Dataset } from "../data/dataset";
import { fromTensors, type TensorsInput } from "../data/from-tensors";
import { ConfigError, DataError } from "../errors/errors";

/** What fit's validationData takes: a dataset, or x and y tensors as model.fit takes them. */
export type ValidationData = Dataset | [TensorsInput, TensorsInput];

/**
 * The samples a fit trains on and the ones it validates on, as model.fit takes them:
 * validationData as given, or with validationSplit the dataset's last fraction, cut before any
 * shuffling (model.fit's own rule), the rest trained on.
 */
export function splitValidation(
  dataset: Dataset,
  o: { validationData?: ValidationData | undefined; validationSplit?: number | undefined },
  arrange: (d: Dataset) => Dataset = (d) => d,
): { train: Dataset; validation: Dataset | undefined } {
  if (o.validationData !== undefined && o.validationSplit !== undefined) {
    throw new ConfigError("validationData and validationSplit were both given", {
      hint: "give one: validationData wins in model.fit, which is easy to miss; meshtrain asks you to choose",
    });
  }
  if (o.validationData !== undefined) {
    const v = o.validationData;
    const validation = arrange(v instanceof Dataset ? v : fromTensors(v[0], v[1], "validation"));
    const shapes = (d: Dataset) =>
      `x ${d.inputs.map((c) => `[${c.sampleShape.join(", ")}]`).join(" + ")} and y ${d.targets.map((c) => `[${c.sampleShape.join(", ")}]`).join(" + ")}`;
    if (shapes(validation) !== shapes(dataset)) {
      throw new DataError(`validation samples are ${shapes(validation)}; the training samples are ${shapes(dataset)}`, {
        hint: "validate on samples shaped as the ones trained on",
      });
    }
    return { train: dataset, validation };
  }
  if (o.validationSplit === undefined) return { train: dataset, validation: undefined };
  const at = Math.floor(dataset.size * (1 - o.validationSplit));
  if (at < 1 || at >= dataset.size) {
    throw new ConfigError(
      `validationSplit ${o.validationSplit} of ${dataset.size} samples leaves ${at} to train on and ${dataset.size - at} to validate on`,
      { hint: "both parts need at least one sample" },
    );
  }
  return { train: dataset.slice(0, at), validation: dataset.slice(at) };
}
