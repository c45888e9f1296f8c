import * as tf from "@tensorflow/tfjs";
import type { StepRecord } from "../metrics/records";
import { epochHistory } from "../metrics/epochs";

/**
 * What fit's `callbacks` option takes, as model.fit's does: hooks by name
 * (`{ onEpochEnd: async (epoch, logs) => ... }`), TF.js callbacks such as
 * `tf.callbacks.earlyStopping(...)`, or a list of either. (A TF.js callback fits the hooks'
 * type too; one union member for objects keeps an inline object's hooks typed.)
 */
export type FitCallbacks = tf.CustomCallbackArgs | ReadonlyArray<tf.CustomCallbackArgs | tf.Callback>;

/** What model.fit's callbacks get as params, from a fit's shape. */
export interface CallbackParams {
  epochs: number;
  initialEpoch: number;
  samples: number;
  steps: number;
  batchSize: number;
  metrics: string[];
}

/**
 * A fit's callbacks, called on the driver at its step boundaries with the logs model.fit gives
 * (TF.js's own CallbackList dispatches them): batches as the steps, numbered within their epoch,
 * with the step's loss and metrics; epochs with their sample-weighted means. A callback that sets
 * `model.stopTraining` (early stopping) ends the fit at the next step boundary, as model.fit does.
 */
export class CallbackRun {
  private readonly list: tf.CallbackList;

  constructor(
    given: FitCallbacks,
    private readonly model: tf.LayersModel,
  ) {
    const each = (Array.isArray(given) ? given : [given]) as ReadonlyArray<tf.CustomCallbackArgs | tf.Callback>;
    this.list = new tf.CallbackList(each.map((c) => (isCallback(c) ? c : new tf.CustomCallback(c))));
    this.list.setModel(model);
  }

  trainBegin(params: CallbackParams): Promise<void> {
    this.model.stopTraining = false;
    this.list.setParams({ ...params, verbose: 0, doValidation: false });
    return this.list.onTrainBegin();
  }

  epochBegin(epoch: number): Promise<void> {
    return this.list.onEpochBegin(epoch);
  }

  /** As model.fit: empty logs before the batch; its index and size come with batchEnd. */
  batchBegin(batch: number): Promise<void> {
    return this.list.onBatchBegin(batch, {});
  }

  batchEnd(batch: number, rec: StepRecord): Promise<void> {
    return this.list.onBatchEnd(batch, { batch, size: rec.samples, loss: rec.loss, ...(rec.metrics ?? {}) });
  }

  /** The epoch's logs: its steps' loss and metrics, weighted by samples (a skipped step counts for none), and its validation's val_ entries. */
  epochEnd(epoch: number, steps: readonly StepRecord[], validation: Record<string, number> = {}): Promise<void> {
    const h = epochHistory(steps.filter((s) => s.epoch === epoch)).history;
    return this.list.onEpochEnd(epoch, {
      ...Object.fromEntries(Object.entries(h).map(([k, v]) => [k, v[0]!])),
      ...validation,
    });
  }

  trainEnd(): Promise<void> {
    return this.list.onTrainEnd();
  }

  /** Whether a callback asked the fit to end (model.stopTraining). */
  get stopTraining(): boolean {
    return this.model.stopTraining;
  }
}

function isCallback(c: tf.CustomCallbackArgs | tf.Callback): c is tf.Callback {
  return typeof (c as { setParams?: unknown }).setParams === "function";
}
