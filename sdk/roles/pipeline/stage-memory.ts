import type * as tf from "@tensorflow/tfjs";
import type { LoadOf } from "../../protocol/messages";
import { ModelError } from "../../errors/errors";
import { formatBytes, optimizerSlots } from "../../plan/memory";
import { summarizeModel } from "../../plan/model-summary";
import { stageCost, stageNeedBytes, stageNeedText } from "../../plan/partition";
import { actionsInFlight } from "../../plan/schedules";

/** Refuses a stage whose estimate is above this worker's memory cap (disposing the model built for it). */
export function checkStageMemory(model: tf.LayersModel, msg: LoadOf<"stage">, memoryCapBytes: number | null): void {
  if (memoryCapBytes === null) return;
  const stage = msg.stage;
  const summary = summarizeModel(model);
  const c = stageCost(
    {
      layers: summary.layers,
      stages: stage.count,
      microBatchSize: stage.microBatchSize,
      optimizerSlots: optimizerSlots(msg.optimizer),
      inFlight: () => actionsInFlight(stage.actions),
      memoryBytes: () => Infinity,
    },
    stage.index,
    0,
    summary.layers.length,
  );
  const need = stageNeedBytes(c);
  if (need <= memoryCapBytes) return;
  model.dispose();
  throw new ModelError(
    `stage ${stage.index} (layers [${stage.from}, ${stage.to})) needs ${stageNeedText(c, ` for micro-batches of ${stage.microBatchSize}`)}, above this worker's memory cap of ${formatBytes(memoryCapBytes)}`,
    {
      hint: "split the model over more stages or workers, use smaller micro-batches, or raise .memory()",
      details: { neededBytes: need, capBytes: memoryCapBytes },
    },
  );
}
