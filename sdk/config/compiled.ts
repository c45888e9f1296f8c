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
  loss(): LossName | undefined;
  /** The metrics as model.compile named them, resolved once the loss is known. */
  metrics: (loss: LossName) => MetricSpec[];
}

/** TF.js optimizer class names (getClassName()) and the name meshtrain gives the same update. */
const OPTIMIZER_CLASSES: Readonly<Record<string, OptimizerSpec["name"]>> = { SGD: "sgd", Momentum: "momentum", Adam: "adam", RMSProp: "rmsprop", Adagrad: "adagrad", Adadelta: "adadelta", Adamax: "adamax" };

interface CompiledModel {
  optimizer?: tf.Optimizer;
  loss?: unknown;
  metrics?: unknown;
  metricsNames?: string[];
  outputs: tf.SymbolicTensor[];
}

/** Reads model.compile's optimizer, loss and metrics; refuses what cannot cross the wire, naming it. */
export function readCompiled(model: tf.LayersModel): Compiled {
  const m = model as unknown as CompiledModel;
  const units = m.outputs[0]?.shape[m.outputs[0].shape.length - 1] ?? null;
  const names = m.metricsNames ?? [];
  const listed = m.metrics === undefined ? [] : Array.isArray(m.metrics) ? (m.metrics as unknown[]) : [m.metrics];
  return {
    optimizer: () => (m.optimizer ? optimizerOf(m.optimizer) : undefined),
    loss: () => (m.loss === undefined ? undefined : lossOf(m.loss)),
    metrics: (loss) =>
      listed.map((x, i) => {
        const fn = typeof x === "string" ? metricFn(x, loss, units) : undefined;
        if (!fn) throw unsupported("metric", describe(x), `metrics meshtrain computes on the workers: ${METRIC_NAMES.join(", ")}`);
        return { name: names[i + 1] ?? (x === "accuracy" ? "acc" : (x as string)), fn };
      }),
  };
}

function optimizerOf(opt: tf.Optimizer): OptimizerSpec {
  const cls = opt.getClassName();
  const name = OPTIMIZER_CLASSES[cls];
  if (!name) throw unsupported("optimizer", cls, `optimizers meshtrain applies on the workers: ${Object.keys(OPTIMIZER_CLASSES).join(", ")} (fit option optimizer: ${OPTIMIZER_NAMES.join(", ")})`);
  const parsed = OptimizerSpecSchema.safeParse({ name, ...opt.getConfig() });
  if (!parsed.success) throw unsupported("optimizer", `${cls} ${JSON.stringify(opt.getConfig())}`, `its settings are out of range: ${parsed.error.issues[0]?.message ?? "?"}`);
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
  return new ConfigError(`the model was compiled with the ${what} ${name}, which cannot be sent to the workers: they build only what they know by name and never run code sent to them`, {
    hint: `${override}compile with one of the ${supported}`,
    details: { [what]: name },
  });
}
