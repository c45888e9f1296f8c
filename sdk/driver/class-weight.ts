import type { Dataset } from "../data/dataset";
import { ConfigError, DataError } from "../errors/errors";

/** Fit option classWeight, as model.fit's: a loss weight per class index. */
export type ClassWeight = Record<number, number>;

/**
 * classWeight as the workers take it: class c's weight at [c]. Each sample's class is its
 * label's argmax (one-hot labels) or the label itself (class ids), as in model.fit; a class the
 * data has but classWeight lacks is refused here, before anything trains, as model.fit refuses it.
 */
export function classWeightTable(dataset: Dataset, classWeight: ClassWeight): number[] {
  for (const [k, w] of Object.entries(classWeight)) {
    if (!/^\d+$/.test(k) || !(typeof w === "number" && Number.isFinite(w) && w >= 0)) {
      throw new ConfigError(
        `classWeight { ${k}: ${String(w)} }: keys are class indices (0, 1, ...) and weights finite numbers >= 0`,
        { hint: "e.g. classWeight: { 0: 1, 1: 5 }" },
      );
    }
  }
  if (dataset.targets.length > 1) {
    throw new ConfigError(
      `classWeight weighs the classes of one output; this dataset has ${dataset.targets.length} target columns (a model with several outputs)`,
      {
        hint: "weigh the outputs' losses with lossWeights, or train each output's classes balanced in the data",
      },
    );
  }
  const shape = dataset.y.sampleShape;
  const per = shape.reduce((a, b) => a * b, 1);
  if (shape.length > 1)
    throw new DataError(
      `classWeight needs one label per sample (one-hot or a class id); the labels are [${shape.join(", ")}] per sample`,
    );
  const y = dataset.y.data;
  const present = new Set<number>();
  for (let i = 0; i < dataset.size; i++) {
    if (per > 1) {
      let best = 0;
      for (let c = 1; c < per; c++) if (y[i * per + c]! > y[i * per + best]!) best = c;
      present.add(best);
    } else present.add(Number(y[i]));
  }
  const table = Array.from(
    { length: Math.max(per > 1 ? per : 0, ...[...present].map((c) => c + 1)) },
    (_, c) => classWeight[c] ?? 1,
  );
  const missing = [...present].sort((a, b) => a - b).find((c) => classWeight[c] === undefined);
  if (missing !== undefined) {
    throw new DataError(`classWeight has no weight for class ${missing}, which the training data has`, {
      hint: "give every class the data has a weight, as model.fit requires",
      details: { class: missing },
    });
  }
  return table;
}
