import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND } from "../../sdk/backends/native/backend";
import { DataReplica } from "../../sdk/roles/data/replica";
import type { HostIO } from "../../sdk/roles/role";
import type { OptimizerSpec } from "../../sdk/protocol/optimizer-spec";
import type { Tensorlike } from "../../sdk/protocol/tensor";
import { CollectiveError } from "../../sdk/errors/errors";
import { assertClose, nativeAvailable, randomArray } from "../helpers/backends";

/**
 * A ZeRO-2/3 step's collectives travel over the links of the membership the step was sent for.
 * An elastic fit re-forms the ring while a step of the old membership may still be running on a
 * survivor; if that step's gathers went over the new ring, they would take the sequence numbers
 * of the next step's and that step would fail on this replica while the others wait for it.
 */

tf.enableProdMode();
nativeAvailable();

/** One replica's ring: every collective leaves the buffer as it is, as a ring of one does. */
function alone(calls: string[]): HostIO {
  const same = (kind: string) => async (data: Float32Array) => (calls.push(kind), { data, stats: { waitMs: 0, commMs: 0, bytesSent: 0 } });
  return {
    allReduce: same("all-reduce"),
    reduceScatter: same("reduce-scatter"),
    allGather: same("all-gather"),
    shardOf: (length) => [0, length],
    overlap: () => null,
    receive: () => Promise.reject(new Error("no pipeline here")),
    send: () => undefined,
    servers: { pull: () => Promise.reject(new Error("no servers here")), push: () => Promise.reject(new Error("no servers here")) },
  };
}

/** The ring re-formed since the step was sent: cut the same way, but any collective on it is the new membership's. */
function reformed(): HostIO {
  const refuse = () => Promise.reject(new CollectiveError("a collective of the old membership's step reached the re-formed ring"));
  return { ...alone([]), allReduce: refuse, reduceScatter: refuse, allGather: refuse };
}

function model(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.dense({ inputShape: [6], units: 5, activation: "relu", kernelInitializer: tf.initializers.glorotUniform({ seed: 1 }) }),
      tf.layers.dense({ units: 3, activation: "softmax", kernelInitializer: tf.initializers.glorotUniform({ seed: 2 }) }),
    ],
  });
}

for (const shard of ["gradients", "parameters"] as const) {
  test(`ZeRO-${shard === "gradients" ? 2 : 3}: a step's collectives go over the links it was sent for, not the ring re-formed since; it ends as the unsharded step`, async () => {
    tf.setBackend(NATIVE_BACKEND);
    const m = model();
    const topology = m.toJSON(null, false) as unknown as Record<string, unknown>;
    const initial: Tensorlike[] = m.getWeights().map((w) => ({ data: w.dataSync() as Float32Array, shape: [...w.shape] }));
    const x: Tensorlike = { data: randomArray(8 * 6, 3), shape: [8, 6] };
    const y: Tensorlike = { data: Float32Array.from({ length: 24 }, (_, i) => (i % 3 === Math.floor(i / 3) % 3 ? 1 : 0)), shape: [8, 3] };
    const optimizer: OptimizerSpec = { name: "adam", learningRate: 0.01, beta1: 0.9, beta2: 0.999 };
    const load = { type: "load" as const, v: PROTOCOL_VERSION as typeof PROTOCOL_VERSION, id: 1, role: "replica" as const, topology, optimizer, loss: "categoricalCrossentropy" as const, replicaBatch: 8, stepTimeoutMs: 60_000, attachments: [] };
    // The links of the membership now, as the host hands them to a role outside a step.
    let now: () => HostIO = reformed;
    const sharded = await DataReplica.load({ ...load, sum: { kind: shard === "gradients" ? ("zero-2" as const) : ("zero-3" as const), over: 1 } }, initial, { io: () => now() });
    const plain = await DataReplica.load(load, initial);
    const calls: string[] = [];
    for (let step = 0; step < 2; step++) {
      await sharded.step({ type: "step", v: PROTOCOL_VERSION, id: 2 + step, step, epoch: 0, weight: 1, generation: 1, attachments: [] }, [x, y], alone(calls));
      await plain.step({ type: "step", v: PROTOCOL_VERSION, id: 2 + step, step, epoch: 0, weight: 1, attachments: [] }, [x, y], alone([]));
    }
    assert.ok(calls.includes("reduce-scatter") && calls.includes("all-gather"), `the step's own links carried its collectives: ${calls.join(", ")}`);
    // The driver asks for the weights in the membership of now (under ZeRO-3 every replica gathers them).
    now = () => alone([]);
    const got = (await sharded.weights()).tensors;
    const want = (await plain.weights()).tensors;
    got.forEach((w, i) => assertClose(w.data, want[i]!.data, 1e-6, `weight ${i}`));
    sharded.dispose();
    plain.dispose();
    tf.setBackend("cpu");
  });
}
