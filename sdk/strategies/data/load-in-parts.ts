import type * as tf from "@tensorflow/tfjs";
import { ProtocolError } from "../../errors/errors";
import type { WorkerHandle } from "../../members/worker-handle";
import { rangesLength } from "../../model/flat-state";
import { flatRangesOf, untrainedWeights } from "../../model/shard-load";
import type { LoadOf, MessageOf } from "../../protocol/messages";
import type { Tensorlike } from "../../protocol/tensor";
import type { Incoming } from "../../transport/channel";

/**
 * A ZeRO-3 replica loaded without the whole model ever on it: the load carries the weights that
 * are not trained, the replica builds the rest zeroed and says which ranges of the flat
 * trainable weights it holds, and is then sent only those. `weights` is the whole model's, in
 * model.weights order (the driver's model, or the members' gathered for a re-shard).
 */
export async function loadInParts(
  w: WorkerHandle,
  model: tf.LayersModel,
  load: Omit<LoadOf<"replica">, "v" | "id" | "attachments">,
  weights: readonly Tensorlike[],
  o: { timeoutMs: number },
): Promise<Incoming<MessageOf<"loaded">>> {
  const at = new Map(model.weights.map((v, i) => [v, i] as const));
  const pick = (vs: tf.LayersModel["weights"]): Tensorlike[] => vs.map((v) => weights[at.get(v)!]!);
  const loaded = await w.channel.request({ ...load, weights: "parts" }, "loaded", {
    timeoutMs: o.timeoutMs,
    waitingFor: "the model to load",
    attachments: pick(untrainedWeights(model)),
  });
  const ranges = loaded.msg.shardRanges;
  if (!ranges)
    throw new ProtocolError(
      `worker ${w.rank} loaded a ZeRO-3 replica in parts without saying which ranges of the weights it holds`,
    );
  const values = flatRangesOf(pick(model.trainableWeights), ranges);
  await w.channel.request({ type: "setShard", ranges }, "shardSet", {
    timeoutMs: o.timeoutMs,
    waitingFor: `worker ${w.rank} to take its part of the weights`,
    attachments: [{ data: values, shape: [rangesLength(ranges)] }],
  });
  return loaded;
}
