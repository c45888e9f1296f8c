import type * as tf from "@tensorflow/tfjs";
import { ConfigError } from "../errors/errors";
import type { Heads, LossName } from "../protocol/loss-names";

/** A loss for every output (one name), one per output in order, or one per output by name: as model.compile takes them. */
export type LossInput = LossName | readonly LossName[] | Readonly<Record<string, LossName>>;

/** Each output's weight in the total loss, in order or by output name (Keras' lossWeights; TF.js has none). Default 1 each. */
export type LossWeights = readonly number[] | Readonly<Record<string, number>>;

/**
 * The loss of each of the model's outputs and its weight, in the model's output order, from what
 * fit or model.compile gave. One output: its loss, no heads. Several: `heads` for the workers.
 */
export function resolveHeads(
  model: tf.LayersModel | undefined,
  loss: LossInput,
  weights: LossWeights | undefined,
): { loss: LossName; heads?: Heads } {
  const names = model?.outputNames ?? [];
  const n = Math.max(1, names.length);
  const losses = perOutput("loss", loss, names, n, (v): v is LossName => typeof v === "string");
  if (n === 1) {
    if (weights !== undefined)
      throw new ConfigError("lossWeights weighs the losses of several outputs; this model has one", {
        hint: "leave lossWeights out",
      });
    return { loss: losses[0]! };
  }
  const w =
    weights === undefined
      ? names.map(() => 1)
      : perOutput(
          "lossWeights",
          weights,
          names,
          n,
          (v): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0,
        );
  return { loss: losses[0]!, heads: losses.map((l, k) => ({ loss: l, weight: w[k]! })) };
}

function perOutput<T>(
  what: string,
  given: T | readonly T[] | Readonly<Record<string, T>>,
  names: readonly string[],
  n: number,
  ok: (v: unknown) => v is T,
): T[] {
  if (ok(given)) return Array.from({ length: n }, () => given);
  if (Array.isArray(given)) {
    const list = given as readonly T[];
    if (list.length !== n || !list.every(ok)) {
      throw new ConfigError(
        `${what} lists ${list.length} value(s); the model has ${n} output(s) (${names.join(", ")}), one each`,
        { hint: `give ${what} one value per output, in the model's output order, or a map by output name` },
      );
    }
    return [...list];
  }
  const map = given as Readonly<Record<string, T>>;
  const unknown = Object.keys(map).filter((k) => !names.includes(k));
  const missing = names.filter((k) => !(k in map));
  if (unknown.length > 0 || missing.length > 0 || !names.every((k) => ok(map[k]))) {
    throw new ConfigError(
      `${what} names ${unknown.length ? `outputs the model does not have (${unknown.join(", ")})` : `no value for output(s) ${missing.join(", ") || "?"}`}; the model's outputs are ${names.join(", ")}`,
      {
        hint: `give ${what} a value for every output by its name (model.outputNames)`,
      },
    );
  }
  return names.map((k) => map[k]!);
}
