import { ConfigError } from "../errors/errors";
import { elementCount } from "../protocol/tensor";
import { Dataset } from "./dataset";
import { mixSeed, normals } from "./random";

/** datasets.synthetic(options): seeded random inputs and one-hot classes of a chosen shape. */
export interface SyntheticOptions {
  /** Shape of one input sample, e.g. [784] or [28, 28, 1]. */
  inputShape: readonly number[];
  /** Number of classes; targets are one-hot. Default 10. */
  classes?: number;
  /** Number of samples. Default 1024. */
  size?: number;
  /** Same seed, same data, in every process. Default 0. */
  seed?: number;
}

/**
 * Gaussian inputs labelled by a fixed random linear "teacher" (label = argmax of W x), so the
 * data is learnable and a model's accuracy on it means something.
 */
export function synthetic(options: SyntheticOptions): Dataset {
  const classes = options.classes ?? 10;
  const size = options.size ?? 1024;
  const seed = options.seed ?? 0;
  const features = elementCount(options.inputShape);
  if (!Number.isInteger(classes) || classes < 2)
    throw new ConfigError(`synthetic classes ${classes} must be an integer >= 2`);
  if (!Number.isInteger(size) || size < 1) throw new ConfigError(`synthetic size ${size} must be an integer >= 1`);
  if (features < 1 || options.inputShape.some((d) => !Number.isInteger(d) || d < 1)) {
    throw new ConfigError(`synthetic inputShape [${options.inputShape.join(", ")}] must hold positive integers`);
  }
  const x = normals(size * features, mixSeed(seed, 1));
  const w = normals(classes * features, mixSeed(seed, 2));
  const y = new Float32Array(size * classes);
  for (let i = 0; i < size; i++) {
    let best = 0;
    let bestScore = -Infinity;
    for (let c = 0; c < classes; c++) {
      let s = 0;
      for (let f = 0; f < features; f++) s += w[c * features + f]! * x[i * features + f]!;
      if (s > bestScore) {
        bestScore = s;
        best = c;
      }
    }
    y[i * classes + best] = 1;
  }
  return new Dataset(
    `synthetic-${seed}`,
    { data: x, sampleShape: [...options.inputShape], dtype: "float32" },
    { data: y, sampleShape: [classes], dtype: "float32" },
    { kind: "synthetic", inputShape: [...options.inputShape], classes, size, seed },
  );
}
