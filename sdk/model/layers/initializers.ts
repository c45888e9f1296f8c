import * as tf from "@tensorflow/tfjs";
import { ModelError } from "../../errors/errors";

/** An initializer as tf.initializers makes one. */
export type Initializer = ReturnType<typeof tf.initializers.zeros>;
/** An initializer by tfjs-layers' name, or one made with tf.initializers. */
export type InitializerInput =
  Initializer | "glorotUniform" | "glorotNormal" | "heNormal" | "heUniform" | "zeros" | "ones" | "randomNormal";

const BY_NAME: Readonly<Record<string, () => Initializer>> = {
  glorotUniform: () => tf.initializers.glorotUniform({}),
  glorotNormal: () => tf.initializers.glorotNormal({}),
  heNormal: () => tf.initializers.heNormal({}),
  heUniform: () => tf.initializers.heUniform({}),
  zeros: () => tf.initializers.zeros(),
  ones: () => tf.initializers.ones(),
  randomNormal: () => tf.initializers.randomNormal({}),
};

export function initializerOf(i: InitializerInput): Initializer {
  if (typeof i !== "string") return i;
  const make = BY_NAME[i];
  if (!make) throw new ModelError(`unknown initializer "${i}" (${Object.keys(BY_NAME).join(", ")})`);
  return make();
}

/** As a layer's config keeps it: the name, or { className, config }. */
export function serializeInitializer(i: InitializerInput): tf.serialization.ConfigDictValue {
  return typeof i === "string" ? i : { className: i.getClassName(), config: i.getConfig() };
}

/** Back from a config: by the classes TF.js registered (no code arrives with a config). */
export function deserializeInitializer(v: unknown): InitializerInput | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "string") return v as InitializerInput;
  const { className, config } = v as { className?: string; config?: tf.serialization.ConfigDict };
  const entry = className ? tf.serialization.SerializationMap.getMap().classNameMap[className] : undefined;
  if (!entry) throw new ModelError(`unknown initializer class "${String(className)}"`);
  const [cls, fromConfig] = entry;
  return fromConfig(cls, config ?? {}) as Initializer;
}
