import * as tf from "@tensorflow/tfjs";
import type { FitContext } from "../../driver/fit-context";
import { awaitAll } from "../../driver/await";
import { fetchWeightsOf } from "../../driver/model-transfer";
import type { PsPlan } from "../../plan/plans";
import type { Tensorlike } from "../../protocol/tensor";

/**
 * Each server's flat shard cut back into its variables and state, placed by their index in
 * model.weights (trainable weights first, then the non-trainable ones, as TF.js orders them).
 */
function unshard(
  plan: PsPlan,
  shards: readonly Float32Array[],
  place: (index: number, values: Float32Array, shape: readonly number[]) => void,
): void {
  const stateAt = plan.model.variables.length;
  shards.forEach((flat, i) => {
    let off = 0;
    const server = plan.servers[i]!;
    for (const [v, at] of [
      ...server.variables.map((v) => [v, v.index] as const),
      ...server.state.map((v) => [v, stateAt + v.index] as const),
    ]) {
      const size = v.shape.reduce((a, d) => a * d, 1);
      place(at, flat.subarray(off, off + size), v.shape);
      off += size;
    }
  });
}

/** The servers' shards, as the model's weights in order. */
export async function serverWeights(ctx: FitContext, plan: PsPlan): Promise<Tensorlike[]> {
  const shards = await fetchWeightsOf(ctx, ctx.servers, "its shard to checkpoint");
  const out: Tensorlike[] = new Array(plan.model.variables.length + plan.model.state.length);
  unshard(
    plan,
    shards.map((sh) => sh[0]!.data as Float32Array),
    (index, values, shape) => (out[index] = { data: values.slice(), shape: [...shape] }),
  );
  return out;
}

/** The trained parameters and state are the servers': the driver's model takes them. Returns each server's version. */
export async function takeServerWeights(ctx: FitContext, model: tf.LayersModel, plan: PsPlan): Promise<number[]> {
  const fetched = await awaitAll(ctx)(
    ctx.servers.map((s) =>
      s.channel.request({ type: "fetchWeights" }, "weights", {
        timeoutMs: ctx.spec.timeouts.stepMs,
        waitingFor: "its shard of the trained parameters",
      }),
    ),
  );
  const weights = model.weights;
  unshard(
    plan,
    fetched.map((f) => f.attachments[0]!.data as Float32Array),
    (index, values, shape) => {
      const t = tf.tensor(values, [...shape], "float32");
      weights[index]!.write(t);
      t.dispose();
    },
  );
  return fetched.map((f) => f.msg.version ?? 0);
}
