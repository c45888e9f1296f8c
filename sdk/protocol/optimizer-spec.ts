import { z } from "zod";

/**
 * Optimizers travel by name and config, never as code. Unset fields take TF.js's defaults
 * (tf.train.*), except the learning rate and momentum, whose defaults are Keras's.
 */
const positive = z.number().positive().finite();
const unit = z.number().min(0).max(1);

export const OptimizerSpecSchema = z.discriminatedUnion("name", [
  z.strictObject({
    name: z.literal("sgd"),
    /** Step size. Default 0.01. */
    learningRate: positive.default(0.01),
  }),
  z.strictObject({
    name: z.literal("momentum"),
    learningRate: positive.default(0.01),
    /** Fraction of the previous update kept. Default 0.9. */
    momentum: unit.default(0.9),
    useNesterov: z.boolean().default(false),
  }),
  z.strictObject({
    name: z.literal("adam"),
    learningRate: positive.default(0.001),
    beta1: unit.default(0.9),
    beta2: unit.default(0.999),
    /** Default: the backend's epsilon (1e-7 on CPU backends), as tf.train.adam. */
    epsilon: positive.optional(),
  }),
  z.strictObject({
    name: z.literal("rmsprop"),
    learningRate: positive.default(0.001),
    decay: unit.default(0.9),
    momentum: unit.default(0),
    epsilon: positive.optional(),
    centered: z.boolean().default(false),
  }),
  z.strictObject({
    name: z.literal("adagrad"),
    learningRate: positive.default(0.001),
    /** Each variable's sum of squared gradients starts here. Default 0.1. */
    initialAccumulatorValue: z.number().min(0).finite().default(0.1),
  }),
  z.strictObject({
    name: z.literal("adadelta"),
    learningRate: positive.default(0.001),
    /** Decay of the running averages of squared gradients and updates. Default 0.95. */
    rho: unit.default(0.95),
    epsilon: positive.optional(),
  }),
  z.strictObject({
    name: z.literal("adamax"),
    learningRate: positive.default(0.001),
    beta1: unit.default(0.9),
    beta2: unit.default(0.999),
    epsilon: positive.optional(),
    /** The learning rate divided by 1 + decay x updates applied. Default 0. */
    decay: z.number().min(0).finite().default(0),
  }),
]);

/** An optimizer by name with its settings, defaults filled in (as fit and plans see it). */
export type OptimizerSpec = z.output<typeof OptimizerSpecSchema>;
/** What users write: a name, or a name with config. */
export type OptimizerInput = OptimizerSpec["name"] | z.input<typeof OptimizerSpecSchema>;
export const OPTIMIZER_NAMES = ["sgd", "momentum", "adam", "rmsprop", "adagrad", "adadelta", "adamax"] as const;

/** The optimizers meshtrain's native backend updates with kernels of its own, in place in the variables (the others run as TF.js's). */
export const IN_PLACE_OPTIMIZERS = ["sgd", "momentum", "adam", "rmsprop"] as const;

export function updatesInPlace(spec: OptimizerSpec | undefined): boolean {
  return spec !== undefined && (IN_PLACE_OPTIMIZERS as readonly string[]).includes(spec.name);
}
