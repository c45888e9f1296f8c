import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND } from "../../sdk/backends/native/backend";
import { ProtocolError } from "../../sdk/errors/errors";
import type { LoadOf } from "../../sdk/protocol/messages";
import type { Tensorlike } from "../../sdk/protocol/tensor";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import type { CommHook } from "../../sdk/roles/data/hooks/comm-hook";
import { addCommHook } from "../../sdk/roles/data/hooks/hook-table";
import { wholeHook } from "../../sdk/roles/data/hooks/whole-hook";
import { DataReplica } from "../../sdk/roles/data/replica";
import { createOptimizer } from "../../sdk/model/optimizers";
import { assertClose, nativeAvailable, randomArray } from "../helpers/backends";
import { inProcessRing, ringLinks } from "../helpers/in-process-ring";

/**
 * Adding a comm hook is one worker file and its line in the table (ARCHITECTURE.md's recipe):
 * a toy hook, registered here as that line, is composed by a replica whose load names it, is
 * called by every summing scheme the same way, and trains two replicas over an in-process ring
 * to where model.fit ends. A hook that needs the whole gradient at once is refused by the
 * schemes that send it in parts.
 */

tf.enableProdMode();
nativeAvailable();

/** What the toy hook saw: a sum per step, every value rounded once, every step kept. */
interface Tally {
  rounded: number;
  sums: number;
  kept: number;
  dropped: number;
}
const tallies: Tally[] = [];

/** The toy: the gradient sent as float32 (a whole hook), halved before it leaves and doubled after, counting what it is asked. */
function toyHook(): CommHook {
  const whole = wholeHook();
  const t: Tally = { rounded: 0, sums: 0, kept: 0, dropped: 0 };
  tallies.push(t);
  return {
    ...whole,
    kind: "toy",
    round: (part) => {
      t.rounded += part.length;
    },
    async sum(flat, n, allReduce) {
      t.sums++;
      for (let i = 0; i < n; i++) flat[i]! *= 0.5;
      const out = await allReduce(flat);
      for (let i = 0; i < n; i++) out.data[i]! *= 2;
      return out;
    },
    settled: (kept) => void (kept ? t.kept++ : t.dropped++),
  };
}
addCommHook("toy", () => toyHook());
addCommHook("toy-whole-at-once", () => ({ ...toyHook(), kind: "toy-whole-at-once", elementwise: false }));

function model(): tf.LayersModel {
  return tf.sequential({
    layers: [
      tf.layers.dense({
        inputShape: [6],
        units: 7,
        activation: "tanh",
        kernelInitializer: tf.initializers.glorotUniform({ seed: 1 }),
      }),
      tf.layers.dense({
        units: 3,
        activation: "softmax",
        kernelInitializer: tf.initializers.glorotUniform({ seed: 2 }),
      }),
    ],
  });
}

const STEPS = 4;
const BATCH = 8;
const xs = randomArray(STEPS * BATCH * 6, 7);
const ys = Float32Array.from({ length: STEPS * BATCH * 3 }, (_, i) => (i % 3 === (Math.floor(i / 3) * 5) % 3 ? 1 : 0));
const rows = (a: Float32Array, width: number, from: number, to: number): Tensorlike => ({
  data: a.slice(from * width, to * width),
  shape: [to - from, width],
});
const optimizer = { name: "sgd" as const, learningRate: 0.2 };

function loadOf(extra: Partial<LoadOf<"replica">>): LoadOf<"replica"> {
  const topology = model().toJSON(null, false) as unknown as Record<string, unknown>;
  return {
    type: "load",
    v: PROTOCOL_VERSION,
    id: 1,
    role: "replica",
    topology,
    optimizer,
    loss: "categoricalCrossentropy",
    replicaBatch: BATCH / 2,
    stepTimeoutMs: 60_000,
    attachments: [],
    ...extra,
  };
}

/** The weights model.fit ends with on the whole batches. */
async function reference(): Promise<Float32Array[]> {
  tf.setBackend("cpu");
  const m = model();
  m.compile({ optimizer: createOptimizer(optimizer), loss: "categoricalCrossentropy" });
  await m.fit(tf.tensor2d(xs, [STEPS * BATCH, 6]), tf.tensor2d(ys, [STEPS * BATCH, 3]), {
    batchSize: BATCH,
    epochs: 1,
    shuffle: false,
    verbose: 0,
  });
  return m.getWeights().map((w) => w.dataSync() as Float32Array);
}

/** Two replicas over an in-process ring, each on half of every batch; their weights after. */
async function train(load: LoadOf<"replica">): Promise<{ weights: Float32Array[][]; sums: string[] }> {
  tf.setBackend(NATIVE_BACKEND);
  const initial: Tensorlike[] = model()
    .getWeights()
    .map((w) => ({ data: w.dataSync() as Float32Array, shape: [...w.shape] }));
  const { rings } = inProcessRing(2, 64);
  const io = rings.map((r, p) => ringLinks(r, p, 2));
  // Each its own copy: the native backend adopts an array it is given and updates it in place.
  const replicas = await Promise.all(
    io.map((links) =>
      DataReplica.load(
        load,
        initial.map((t) => ({ ...t, data: (t.data as Float32Array).slice() })),
        { io: () => links },
      ),
    ),
  );
  try {
    for (let step = 0; step < STEPS; step++) {
      const steps = replicas.map((r, p) => {
        const [from, to] = [step * BATCH + (p * BATCH) / 2, step * BATCH + ((p + 1) * BATCH) / 2];
        return r.step(
          { type: "step", v: PROTOCOL_VERSION, id: 2 + step, step, epoch: 0, weight: 0.5, attachments: [] },
          [rows(xs, 6, from, to), rows(ys, 3, from, to)],
          io[p]!,
        );
      });
      await Promise.all(steps);
    }
    const weights = await Promise.all(
      replicas.map(async (r) => (await r.weights()).tensors.map((t) => t.data as Float32Array)),
    );
    return { weights, sums: replicas.map((r) => r.sumKind) };
  } finally {
    replicas.forEach((r) => r.dispose());
    tf.setBackend("cpu");
  }
}

for (const sum of [undefined, { kind: "zero-1" as const, over: 2 }]) {
  test(`a toy comm hook added as one line of the table trains like model.fit, summed by ${sum?.kind ?? "all-reduce"}`, async () => {
    const want = await reference();
    const from = tallies.length;
    const got = await train(
      loadOf({ hook: { kind: "toy" } as unknown as LoadOf<"replica">["hook"], ...(sum ? { sum } : {}) }),
    );
    assert.deepEqual(got.sums, [sum?.kind ?? "all-reduce", sum?.kind ?? "all-reduce"]);
    for (const [p, w] of got.weights.entries())
      w.forEach((t, i) => assertClose(t, want[i]!, 1e-5, `replica ${p}, weight ${i}`));
    const seen = tallies.slice(from);
    assert.equal(seen.length, 2, "each replica made its own hook");
    // Every step rounds the whole gradient (6x7 + 7 + 7x3 + 3 values) once and is kept; ZeRO-1 reduce-scatters it, never calling the hook's sum.
    for (const t of seen) assert.deepEqual(t, { rounded: STEPS * 73, sums: sum ? 0 : STEPS, kept: STEPS, dropped: 0 });
  });
}

test("a hook that sends the whole gradient at once is refused by a sum that sends it in parts, and an unknown hook or sum by name", async () => {
  tf.setBackend(NATIVE_BACKEND);
  try {
    const initial = "initial" as const;
    const links = () => ringLinks(inProcessRing(1, 64).rings[0]!, 0, 1);
    const load = (extra: object) => loadOf(extra as Partial<LoadOf<"replica">>);
    await assert.rejects(
      DataReplica.load(load({ hook: { kind: "toy-whole-at-once" }, sum: { kind: "zero-1", over: 1 } }), initial, {
        io: links,
      }),
      (e: unknown) =>
        e instanceof ProtocolError &&
        /"toy-whole-at-once" sends the whole gradient at once, and zero-1 reduce-scatters it/.test(
          (e as Error).message,
        ),
    );
    await assert.rejects(
      DataReplica.load(load({ hook: { kind: "int3" } }), initial),
      (e: unknown) =>
        e instanceof ProtocolError &&
        /comm hook "int3", which this worker does not know \(it knows none, fp16, bf16, powersgd, toy/.test(
          (e as Error).message,
        ),
    );
    await assert.rejects(
      DataReplica.load(load({ sum: { kind: "zero-9" } }), initial),
      (e: unknown) => e instanceof ProtocolError && /summing scheme "zero-9"/.test((e as Error).message),
    );
    assert.throws(() => addCommHook("fp16", () => wholeHook()), /already registered/);
  } finally {
    tf.setBackend("cpu");
  }
});
