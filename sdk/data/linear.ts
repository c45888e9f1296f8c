import { ConfigError } from "../errors/errors";
import { Dataset } from "./dataset";
import { mixSeed, normals, rng } from "./random";

/** datasets.linear(options): y = slope x + intercept + noise, seeded. */
export interface LinearOptions {
  /** Number of samples. Default 1024. */
  size?: number;
  /** y = slope * x + intercept + noise. Defaults 3 and 2. */
  slope?: number;
  intercept?: number;
  /** Standard deviation of the Gaussian noise. Default 0.1. */
  noise?: number;
  /** Same seed, same data, in every process. Default 0. */
  seed?: number;
}

/**
 * The classic first model: points on a line plus noise, x uniform in [-1, 1]. Learnable by one
 * dense unit; what the distributed-TensorFlow case study starts from.
 */
export function linear(options: LinearOptions = {}): Dataset {
  const size = options.size ?? 1024;
  const slope = options.slope ?? 3;
  const intercept = options.intercept ?? 2;
  const noise = options.noise ?? 0.1;
  const seed = options.seed ?? 0;
  if (!Number.isInteger(size) || size < 1) throw new ConfigError(`linear size ${size} must be an integer >= 1`);
  if (!(noise >= 0)) throw new ConfigError(`linear noise ${noise} must be >= 0`);
  const r = rng(mixSeed(seed, 3));
  const eps = normals(size, mixSeed(seed, 4));
  const x = new Float32Array(size);
  const y = new Float32Array(size);
  for (let i = 0; i < size; i++) {
    x[i] = r() * 2 - 1;
    y[i] = slope * x[i]! + intercept + noise * eps[i]!;
  }
  return new Dataset(
    `linear-${seed}`,
    { data: x, sampleShape: [1], dtype: "float32" },
    { data: y, sampleShape: [1], dtype: "float32" },
    { kind: "linear", size, slope, intercept, noise, seed },
  );
}
