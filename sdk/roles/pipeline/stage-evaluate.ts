import * as tf from "@tensorflow/tfjs";
import { ProtocolError } from "../../errors/errors";
import type { MessageOf } from "../../protocol/messages";
import { rowsOf, type Tensorlike } from "../../protocol/tensor";
import { tensorOf } from "../../model/model-io";
import { labelTensor } from "../../compute/step-health";
import { readConcat } from "../../compute/device-io";
import { outputList, reportedNames, type Objective } from "../../compute/objective";
import { addBatchSums } from "../data/evaluate-shard";
import type { StageIO } from "./stage-run";

/** What a stage is, as its evaluation needs it. */
export interface EvaluatedStage {
  model: tf.LayersModel;
  objective: Objective | null;
  index: number;
  receives: boolean;
  passes: boolean;
  inputShape: readonly number[];
  feeds: number;
  heads: number;
}

/**
 * A stage's part of validation, as model.fit's validation computes it through the whole model:
 * `batchSize` samples at a time in inference mode, the activation from the stage before in, the
 * stage's own on, and the plain losses and metrics of the outputs it makes summed over the shard
 * (each batch's mean times its size). The driver adds every stage's sums.
 */
export async function evaluateStage(
  st: EvaluatedStage,
  msg: MessageOf<"evaluate">,
  attachments: readonly Tensorlike[],
  io: StageIO,
): Promise<{ samples: number; lossSum: number; metricSums: Record<string, number> }> {
  const at = msg.stage;
  if (!at || attachments.length !== st.feeds + st.heads) {
    throw new ProtocolError(
      `stage ${st.index}'s "evaluate" carries ${attachments.length} tensors${at ? "" : " and no stage part"}; it takes ${st.feeds} input(s) and ${st.heads} target(s)`,
    );
  }
  const names = st.objective ? reportedNames(st.objective) : [];
  const sums = new Float64Array(1 + names.length);
  for (let chunk = 0, start = 0; start < at.samples; chunk++, start += msg.batchSize) {
    const end = Math.min(at.samples, start + msg.batchSize);
    const received = st.receives
      ? [tf.tensor(await io.receive("activation", at.seq, chunk), [end - start, ...st.inputShape])]
      : [];
    const inputs = [...received, ...attachments.slice(0, st.feeds).map((t) => tensorOf(rowsOf(t, start, end)))];
    const ys = attachments.slice(st.feeds).map((t) => labelTensor(rowsOf(t, start, end)));
    const outs = tf.tidy(() =>
      outputList(
        st.model.apply(inputs.length === 1 ? inputs[0]! : inputs, { training: false }) as tf.Tensor | tf.Tensor[],
      ),
    );
    try {
      if (st.passes) io.send("next", "activation", at.seq, chunk, Float32Array.from(await readConcat([outs[0]!])));
      if (st.objective) await addBatchSums(st.objective, ys, st.passes ? outs.slice(1) : outs, end - start, sums);
    } finally {
      tf.dispose([...inputs, ...ys, ...outs]);
    }
  }
  return {
    samples: at.samples,
    lossSum: sums[0]!,
    metricSums: Object.fromEntries(names.map((n, i) => [n, sums[1 + i]!])),
  };
}
