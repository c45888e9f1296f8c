import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { SyncNorm } from "../../sdk/roles/data/sync-batchnorm";
import { checkedSliceGradient } from "../../sdk/compute/slice-gradient";
import { loadReplica } from "../../sdk/compute/loaded-replica";
import type { Tensorlike } from "../../sdk/protocol/tensor";

tf.enableProdMode();

/** BatchNormalization on channels last of a [3, 4] sample (statistics over the batch and the first axis), with a dense head. */
function model(axis: number): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.batchNormalization({ inputShape: [3, 4], axis, momentum: 0.7 }),
      tf.layers.flatten(),
      tf.layers.dense({ units: 2, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 3 }) }),
    ],
  });
}

test("alone (the all-reduce gives back what it gets), synchronized normalization is BatchNormalization: the same loss, gradient and moving statistics", async () => {
  {
    const axis = -1;
    const m = model(axis);
    const load = () =>
      loadReplica(
        { type: "load", v: PROTOCOL_VERSION, id: 1, role: "replica", topology: m.toJSON(null, false) as unknown as Record<string, unknown>, optimizer: { name: "sgd", learningRate: 0.1 }, loss: "categoricalCrossentropy", replicaBatch: 5, stepTimeoutMs: 1000, attachments: [] },
        m.getWeights().map((w) => ({ data: Float32Array.from(w.dataSync()), shape: [...w.shape] })),
        null,
      );
    const [a, b] = [await load(), await load()];
    const x: Tensorlike = { data: Float32Array.from({ length: 60 }, (_, i) => Math.sin(i * 1.3) * 2 + 0.5), shape: [5, 3, 4] };
    const y: Tensorlike = { data: Float32Array.from({ length: 10 }, (_, i) => (i % 2 === (i >> 1) % 2 ? 1 : 0)), shape: [5, 2] };
    const [ga, gb] = [new Float32Array(a.gradientLength), new Float32Array(b.gradientLength)];
    const [sa, sb] = [new Float32Array(a.state.length), new Float32Array(b.state.length)];
    const sync = new SyncNorm(a.model);
    assert.equal(sync.layers, 1);
    const rounds: number[] = [];
    const synced = await sync.slice(a, x, y, 1, ga, sa, async (d) => (rounds.push(d.length), { data: d, stats: { waitMs: 0, commMs: 0, bytesSent: 0 } }), 0);
    const plain = await checkedSliceGradient(b, x, y, 1, gb, { stateNow: sb });
    const C = 4;
    assert.deepEqual(rounds, [C + 1, C, 2 * C], "forward: sums and count, then squares; back: what the mean and variance owe");
    assert.ok(Math.abs(synced.loss - plain.loss) < 1e-6, `axis ${axis}: loss ${synced.loss} vs ${plain.loss}`);
    ga.forEach((v, i) => assert.ok(Math.abs(v - gb[i]!) < 1e-5 * Math.max(1, Math.abs(gb[i]!)), `axis ${axis}: gradient ${i}: ${v} vs ${gb[i]}`));
    sa.forEach((v, i) => assert.ok(Math.abs(v - sb[i]!) < 1e-6, `axis ${axis}: moving statistic ${i}: ${v} vs ${sb[i]}`));
  }
});

test("another axis is refused, naming the layer: TF.js's own layer yields NaN there in training", async () => {
  const m = model(1);
  const r = await loadReplica({ type: "load", v: PROTOCOL_VERSION, id: 1, role: "replica", topology: m.toJSON(null, false) as unknown as Record<string, unknown>, optimizer: { name: "sgd", learningRate: 0.1 }, loss: "categoricalCrossentropy", replicaBatch: 5, stepTimeoutMs: 1000, attachments: [] }, "initial", null);
  assert.throws(() => new SyncNorm(r.model), (e: unknown) => e instanceof Error && /normalizes axis 1/.test(e.message));
});
