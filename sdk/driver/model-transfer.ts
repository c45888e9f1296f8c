import * as tf from "@tensorflow/tfjs";
import type { WorkerHandle } from "../members/worker-handle";
import { ModelError } from "../errors/errors";
import type { Tensorlike } from "../protocol/tensor";
import { awaitAll } from "./await";
import type { FitContext } from "./fit-context";
import type { ResolvedFitOptions } from "./fit-options";
import { createOptimizer } from "../model/optimizers";

/** Host copies of tensors, for attachments. */
export function hostCopies(ts: readonly tf.Tensor[]): Tensorlike[] {
  return ts.map((w) => ({
    data:
      w.dtype === "int32"
        ? Int32Array.from(w.dataSync() as Int32Array)
        : Float32Array.from(w.dataSync() as Float32Array),
    shape: [...w.shape],
  }));
}

export function setModelWeights(model: tf.LayersModel, weights: readonly Tensorlike[]): void {
  const current = model.weights;
  if (current.length !== weights.length) {
    throw new ModelError(`the workers returned ${weights.length} weights for a model with ${current.length}`);
  }
  const tensors = weights.map((t, i) => tf.tensor(t.data, [...t.shape], current[i]!.dtype));
  model.setWeights(tensors);
  tf.dispose(tensors);
}

/** The weights each of `workers` holds, fetched; `waitingFor` names what they are for in a timeout. */
export async function fetchWeightsOf(
  ctx: FitContext,
  workers: readonly WorkerHandle[],
  waitingFor: string,
): Promise<Tensorlike[][]> {
  const fetched = await awaitAll(ctx)(
    workers.map((w) =>
      w.channel.request({ type: "fetchWeights" }, "weights", { timeoutMs: ctx.spec.timeouts.stepMs, waitingFor }),
    ),
  );
  return fetched.map((f) => f.attachments);
}

/**
 * A model fit trained but the user never compiled is compiled as it was trained (optimizer, loss,
 * metrics), so model.evaluate and model.predict work after fit as after model.fit.
 */
export function compileIfNot(model: tf.LayersModel, o: ResolvedFitOptions): void {
  if ((model as unknown as { optimizer?: unknown }).optimizer) return;
  // Each metric once, as compiled (a model with several outputs computes it on each, named "<output>_<metric>").
  const short = o.metrics.map((m) =>
    m.output === undefined ? m.name : m.name.slice(model.outputNames[m.output]!.length + 1),
  );
  const metrics = [...new Set(short)].map((n) => (n === "acc" ? "accuracy" : n));
  model.compile({
    optimizer: createOptimizer(o.optimizer),
    loss: o.heads ? o.heads.map((h) => h.loss) : o.loss,
    metrics,
  });
}
