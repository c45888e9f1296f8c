import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND } from "../../sdk/backends/native/backend";
import { ProtocolError, StateError } from "../../sdk/errors/errors";
import { flatRangesOf, untrainedWeights, zeroInitialized } from "../../sdk/model/shard-load";
import type { LoadOf } from "../../sdk/protocol/messages";
import type { Tensorlike } from "../../sdk/protocol/tensor";
import type { HostIO } from "../../sdk/roles/role";
import { DataReplica } from "../../sdk/roles/data/replica";
import { nativeAvailable } from "../helpers/backends";

/**
 * A ZeRO-3 replica loaded in parts (weights "parts"): built with zeros where the topology had
 * initializers, sent only the weights nothing trains, it says which ranges of the flat trainable
 * weights it holds, refuses to compute or gather before "setShard" brings them, and refuses
 * ranges that are not its own. The replica here is rank 1 of 2, its links a stub that gathers
 * nothing (the other replica's parts stay as the gather buffer holds them).
 */

tf.enableProdMode();
nativeAvailable();

function model(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.dense({ inputShape: [3], units: 4, activation: "relu", trainable: false, kernelInitializer: tf.initializers.glorotUniform({ seed: 1 }) }),
      tf.layers.dense({ units: 5, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: 2 }) }),
      tf.layers.dense({ units: 2, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 3 }) }),
    ],
  });
}

const stats = { waitMs: 0, commMs: 0, bytesSent: 0 };
// Rank 1 of 2: the second half of every bucket, as the ring splits an even length.
const io = { shardOf: (n: number) => [Math.ceil(n / 2), n], allGather: async (data: Float32Array) => ({ data, stats }) } as unknown as HostIO;

test("zeroInitialized makes every initializer a Zeros and keeps the rest of the topology", () => {
  tf.setBackend("cpu");
  const m = model();
  const topology = m.toJSON(null, false) as unknown as Record<string, unknown>;
  const text = JSON.stringify(zeroInitialized(topology));
  assert.doesNotMatch(text, /GlorotUniform/);
  assert.match(text, /"kernel_initializer":\{"class_name":"Zeros","config":\{\}\}/);
  assert.equal(text.replace(/"(\w+_initializer)":\{"class_name":"Zeros","config":\{\}\}/g, ""), JSON.stringify(topology).replace(/"(\w+_initializer)":\{"class_name":"\w+","config":\{[^{}]*\}\}/g, ""));
  m.dispose();
});

test("a ZeRO-3 replica loaded in parts holds zeros and the frozen weights sent, says its ranges, and takes its part of the weights only for those ranges", async () => {
  tf.setBackend("cpu");
  const m = model();
  const copy = (w: tf.LayersModel["weights"][number]): Tensorlike => ({ data: Float32Array.from(w.read().dataSync()), shape: w.shape.map((d) => d ?? 1) });
  const whole = m.trainableWeights.map(copy);
  const frozen = untrainedWeights(m).map(copy);
  const topology = m.toJSON(null, false) as unknown as Record<string, unknown>;
  tf.setBackend(NATIVE_BACKEND);
  const msg: LoadOf<"replica"> = { type: "load", v: PROTOCOL_VERSION, id: 1, role: "replica", topology, optimizer: { name: "sgd", learningRate: 0.1 }, loss: "categoricalCrossentropy", replicaBatch: 4, stepTimeoutMs: 60_000, attachments: [], sum: { kind: "zero-3", over: 2, bucketBytes: 0 }, weights: "parts" };
  const replica = await DataReplica.load(msg, frozen, { io: () => io });
  try {
    // Two layers trained, 4x5+5 and 5x2+2 values (25 and 12, flat from 0 and 25), each split by the ring.
    const ranges = replica.loaded.shardRanges;
    assert.deepEqual(ranges, [[13, 25], [31, 37]]);
    await assert.rejects(replica.weights(), StateError, "no gather before its part came");
    const bad = replica.answer({ type: "setShard", v: PROTOCOL_VERSION, id: 2, ranges: [[0, 18] as [number, number]], attachments: [] }, [{ data: new Float32Array(18), shape: [18] }]);
    await assert.rejects(bad!, ProtocolError);
    const part = flatRangesOf(whole, ranges!);
    const reply = await replica.answer({ type: "setShard", v: PROTOCOL_VERSION, id: 3, ranges: ranges!, attachments: [] }, [{ data: part, shape: [part.length] }]);
    assert.deepEqual(reply?.draft, { type: "shardSet", re: 3 });
    assert.equal(replica.loaded.shardRanges, undefined, "no longer waiting for its part");
    const got = (await replica.weights()).tensors;
    const at = (w: tf.LayersModel["weights"][number]): Tensorlike => got[m.weights.indexOf(w)]!;
    // The frozen layer as sent; of the trained ones, this replica's halves as the driver holds them (the stub gathered no other).
    assert.deepEqual(untrainedWeights(m).map((w) => Array.from(at(w).data)), frozen.map((t) => Array.from(t.data)));
    const flat = new Float32Array(37);
    let from = 0;
    for (const w of m.trainableWeights) {
      flat.set(at(w).data as Float32Array, from);
      from += w.shape.reduce<number>((a, d) => a * (d ?? 1), 1);
    }
    assert.ok([...flat.subarray(0, 13), ...flat.subarray(25, 31)].every((v) => v === 0), "the other replica's halves were never sent: zeros, not the topology's initializers");
    assert.deepEqual(Array.from(flat.subarray(13, 25)), Array.from(part.subarray(0, 12)));
    assert.deepEqual(Array.from(flat.subarray(31, 37)), Array.from(part.subarray(12)));
  } finally {
    replica.dispose();
    tf.setBackend("cpu");
    m.dispose();
  }
});
