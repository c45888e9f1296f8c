import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import fc from "fast-check";
import * as tf from "@tensorflow/tfjs";
import { copyOverlap, flatten, listFlat, readFlat, unflatten, wholePieces, type FlatRanges } from "../../sdk/model/flat-state";
import { OptimizerSpecSchema } from "../../sdk/protocol/optimizer-spec";
import { TfjsUpdate } from "../../sdk/compute/tfjs-update";
import { ShardState } from "../../sdk/roles/data/shard-state";
import { readRanges } from "../../sdk/driver/checkpoint/parts";
import { readCheckpointAt, writeCheckpoint } from "../../sdk/driver/checkpoint/store";
import { CheckpointError } from "../../sdk/errors/errors";

/**
 * Sharded checkpoints lay an optimizer's state flat over the parameters: TF.js's optimizers list
 * their slots slot by slot (Adamax piece by piece), sharded replicas in one flat variable; every
 * layout must come back as the same state, whatever shards it passed through.
 */

tf.setBackend("cpu");
const SHAPES = [[3, 4], [5], [2, 2]];
const P = 21;

/** Cuts [0, P) into consecutive ranges at `cuts`. */
function cut(cuts: number[]): FlatRanges {
  const at = [0, ...[...new Set(cuts)].filter((c) => c > 0 && c < P).sort((a, b) => a - b), P];
  return at.slice(1).map((to, i): [number, number] => [at[i]!, to]);
}

function gradient(step: number): Float32Array {
  return Float32Array.from({ length: P }, (_, i) => Math.sin(step * 7 + i) * (i % 3 === 0 ? 10 : 0.1));
}

const weightsOf = async (vars: readonly tf.Variable[]): Promise<Float32Array> => Float32Array.from((await Promise.all(vars.map((v) => v.data()))).flatMap((d) => [...d]));

for (const name of ["adam", "rmsprop", "adagrad", "adadelta", "adamax", "momentum"] as const) {
  test(`TF.js ${name}: its state through three shards, into one flat variable, takes the same next step to the bit`, async () => {
    const spec = OptimizerSpecSchema.parse(name === "rmsprop" ? { name, centered: true, momentum: 0.5 } : { name });
    const initial = Float32Array.from({ length: P }, (_, i) => (i - 10) / 7);
    let off = 0;
    const vars = SHAPES.map((s) => {
      const n = s.reduce((a, d) => a * d, 1);
      const v = tf.variable(tf.tensor(initial.slice(off, off + n), s), true, `w${name}${off}`);
      off += n;
      return v;
    });
    const whole = new TfjsUpdate(vars, spec);
    whole.apply(gradient(1));
    whole.apply(gradient(2));
    const flat = flatten(await whole.exportState(), [[0, P]], wholePieces("tfjs", name, SHAPES));
    // Three replicas' parts, over the wire and back, laid into one whole again.
    const parts = cut([5, 13]).map((r) => readFlat(listFlat({ ...flat, ranges: [r], slots: flat.slots.map((s) => s.slice(r[0], r[1])) })));
    const again = flat.slots.map(() => new Float32Array(P));
    for (const part of parts) part.slots.forEach((s, j) => copyOverlap(s, part.ranges, again[j]!, [[0, P]]));
    assert.deepEqual(again, flat.slots);
    // A sharded replica of one flat variable takes it, and steps as the whole model's optimizer does.
    const one = tf.variable(tf.tensor1d(await weightsOf(vars)), true, `flat${name}`);
    const sharded = new TfjsUpdate([one], spec);
    await new ShardState(sharded, [[0, P]], [P]).import(listFlat({ ...flat, slots: again }));
    whole.apply(gradient(3));
    sharded.apply(gradient(3));
    assert.deepEqual(await weightsOf([one]), await weightsOf(vars));
    // And back to the whole model's layout.
    const back = unflatten(flatten(await sharded.exportState(), [[0, P]], { shapes: [[P]], pieceMajor: true }), wholePieces("tfjs", name, SHAPES));
    const copy = new TfjsUpdate(SHAPES.map((s, i) => tf.variable(tf.zeros(s), true, `c${name}${i}`)), spec);
    await copy.importState(back);
    assert.deepEqual(flatten(await copy.exportState(), [[0, P]], wholePieces("tfjs", name, SHAPES)), flatten(await whole.exportState(), [[0, P]], wholePieces("tfjs", name, SHAPES)));
  });
}

test("copyOverlap puts every value a source and a destination both cover where it belongs", () => {
  fc.assert(
    fc.property(fc.array(fc.nat(P), { maxLength: 6 }), fc.array(fc.nat(P), { maxLength: 6 }), fc.nat(3), (a, b, drop) => {
      const src = cut(a);
      const dst = cut(b).filter((_, i) => i !== drop);
      const values = Float32Array.from(src.flatMap(([f, t]) => Array.from({ length: t - f }, (_, k) => f + k)));
      const out = new Float32Array(dst.reduce((n, [f, t]) => n + t - f, 0)).fill(-1);
      assert.equal(copyOverlap(values, src, out, dst), out.length);
      assert.deepEqual([...out], dst.flatMap(([f, t]) => Array.from({ length: t - f }, (_, k) => f + k)));
    }),
  );
});

test("a sharded checkpoint's parts are read back range by range, and a changed byte is refused naming its part", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-parts-"));
  try {
    const ranges = cut([4, 9, 17]);
    const slot = (j: number): Float32Array => Float32Array.from({ length: P }, (_, i) => j * 100 + i);
    const body = { strategy: "data", step: 3, seed: 1, shuffle: true, batchSize: 4, datasetSize: 8, datasetName: "d", loss: "meanSquaredError", optimizer: { name: "adam" }, modelKey: "k", weights: [], optimizerStates: [] };
    const at = await writeCheckpoint(dir, body, [], [], async (put) => ({
      format: "native",
      slots: 2,
      head: [],
      scalars: { accBeta1: 0.5 },
      parts: ranges.map((r, i) => ({ ...put(i, [slot(0).slice(...r), slot(1).slice(...r)]), ranges: [r] })),
    }));
    const ckpt = readCheckpointAt(at);
    for (const want of [[[0, P]], [[3, 10], [15, 21]], [[9, 9]]] as FlatRanges[]) {
      const read = readRanges(at, ckpt.body.shards!, want);
      for (const j of [0, 1]) assert.deepEqual(read[j], Float32Array.from(want.flatMap(([f, t]) => [...slot(j).slice(f, t)])));
    }
    const file = path.join(at, "optimizer-2.bin");
    const bytes = fs.readFileSync(file);
    bytes[0]! ^= 1;
    fs.writeFileSync(file, bytes);
    assert.throws(() => readCheckpointAt(at), (e: unknown) => e instanceof CheckpointError && e.message.includes(`${file} is corrupt`));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
