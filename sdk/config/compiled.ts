import type * as tf from "@tensorflow/tfjs";
import { ConfigError } from "../errors/errors";
import { LOSS_NAMES, type LossName } from "../protocol/loss-names";
import { metricFn, METRIC_NAMES } from "./metric-names";
import { OPTIMIZER_NAMES, OptimizerSpecSchema, type OptimizerSpec } from "../protocol/optimizer-spec";
import type { MetricSpec } from "../protocol/metric-spec";

/** Where a fit's optimizer or loss came from, for the run's notes. */
export type Origin = "fit options" | "model.compile" | "default";

/**
 * What model.compile set, in the form that crosses the wire; undefined where the model was not
 * compiled. Read only when asked, so a custom loss fit's options replace is never refused.
 */
export interface Compiled {
  optimizer(): OptimizerSpec | undefined;
  /** One loss for every output, or one per output in the model's order. */
  loss(): LossName | LossName[] | undefined;
  /** The metrics as model.compile named them (each on every output, named "<output>_<metric>" where there are several), resolved once each output's loss is known. */
  metrics: (losses: readonly LossName[]) => MetricSpec[];
}

/** TF.js optimizer class names (getClassName()) and the name meshtrain gives the same update. */
const OPTIMIZER_CLASSES: Readonly<Record<string, OptimizerSpec["name"]>> = {
  SGD: "sgd",
  Momentum: "momentum",
  Adam: "adam",
  RMSProp: "rmsprop",
  Adagrad: "adagrad",
  Adadelta: "adadelta",
  Adamax: "adamax",
};

interface CompiledModel {
  optimizer?: tf.Optimizer;
  loss?: unknown;
  metrics?: unknown;
  metricsNames?: string[];
  outputs: tf.SymbolicTensor[];
  outputNames: string[];
}

/** Reads model.compile's optimizer, loss and metrics; refuses what cannot cross the wire, naming it. */
export function readCompiled(model: tf.LayersModel): Compiled {
  const m = model as unknown as CompiledModel;
  const units = m.outputs.map((o) => o.shape[o.shape.length - 1] ?? null);
  const n = m.outputs.length;
  const names = m.metricsNames ?? [];
  const listed = m.metrics === undefined ? [] : Array.isArray(m.metrics) ? (m.metrics as unknown[]) : [m.metrics];
  return {
    optimizer: () => (m.optimizer ? optimizerOf(m.optimizer) : undefined),
    loss: () => (m.loss === undefined ? undefined : lossesOf(m.loss, m.outputNames)),
    metrics: (losses) =>
      // model.fit names each output's metrics after the loss and the outputs' losses, output by output.
      Array.from({ length: n }, (_, k) =>
        listed.map((x, j) => {
          const fn = typeof x === "string" ? metricFn(x, losses[k] ?? losses[0]!, units[k] ?? null) : undefined;
          if (!fn)
            throw unsupported(
              "metric",
              describe(x),
              `metrics meshtrain computes on the workers: ${METRIC_NAMES.join(", ")}`,
            );
          const short = x === "accuracy" ? "acc" : (x as string);
          if (n === 1) return { name: names[j + 1] ?? short, fn };
          return { name: names[1 + n + k * listed.length + j] ?? `${m.outputNames[k]}_${short}`, fn, output: k };
        }),
      ).flat(),
  };
}

function lossesOf(loss: unknown, outputNames: readonly string[]): LossName | LossName[] {
  if (Array.isArray(loss)) return loss.map((l) => lossOf(l));
  if (typeof loss === "object" && loss !== null)
    return outputNames.map((k) => lossOf((loss as Record<string, unknown>)[k]));
  return lossOf(loss);
}

function optimizerOf(opt: tf.Optimizer): OptimizerSpec {
  const cls = opt.getClassName();
  const name = OPTIMIZER_CLASSES[cls];
  if (!name)
    throw unsupported(
      "optimizer",
      cls,
      `optimizers meshtrain applies on the workers: ${Object.keys(OPTIMIZER_CLASSES).join(", ")} (fit option optimizer: ${OPTIMIZER_NAMES.join(", ")})`,
    );
  const parsed = OptimizerSpecSchema.safeParse({ name, ...opt.getConfig() });
  if (!parsed.success)
    throw unsupported(
      "optimizer",
      `${cls} ${JSON.stringify(opt.getConfig())}`,
      `its settings are out of range: ${parsed.error.issues[0]?.message ?? "?"}`,
    );
  return parsed.data;
}

function lossOf(loss: unknown): LossName {
  if (typeof loss === "string" && (LOSS_NAMES as readonly string[]).includes(loss)) return loss as LossName;
  throw unsupported("loss", describe(loss), `losses workers build by name: ${LOSS_NAMES.join(", ")}`);
}

function describe(x: unknown): string {
  if (typeof x === "function") return `function ${x.name || "(anonymous)"}`;
  if (Array.isArray(x)) return `[${x.map(describe).join(", ")}] (one per output)`;
  return typeof x === "string" ? `"${x}"` : String(x);
}

function unsupported(what: "optimizer" | "loss" | "metric", name: string, supported: string): ConfigError {
  const override = what === "metric" ? "" : `give fit the ${what} to use instead ({ ${what}: ... }), or `;
  return new ConfigError(
    `the model was compiled with the ${what} ${name}, which cannot be sent to the workers: they build only what they know by name and never run code sent to them`,
    {
      hint: `${override}compile with one of the ${supported}`,
      details: { [what]: name },
    },
  );
}
