import assert from "node:assert/strict";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND } from "../../sdk/backends/native/backend";
import { slowStepLine } from "../../sdk/metrics/replica-step";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import type { Tensorlike } from "../../sdk/protocol/tensor";
import { DataReplica } from "../../sdk/roles/data/replica";
import { nativeAvailable } from "../helpers/backends";
import { sentiment } from "../../bench/zoo/models";
import { zooBatch } from "../../bench/zoo/tfjs-zoo";
import { ZOO_MODELS } from "../../bench/zoo/models";

/**
 * A replica whose slice computes well below what its FLOPs predict says so, once, with where
 * the time went: an LSTM over 100 steps of 16 units (each step's products far too small to run
 * at a matrix product's speed). The native step names its layers; TF.js's autodiff its kernels.
 */

tf.enableProdMode();
nativeAvailable();

async function slowReportOn(backend: string): Promise<NonNullable<Awaited<ReturnType<DataReplica["train"]>>["slow"]>[]> {
  tf.setBackend(backend);
  const m = sentiment(1, { vocab: 500, dim: 8, units: 16, T: 100 });
  const topology = m.toJSON(null, false) as unknown as Record<string, unknown>;
  const weights = m.getWeights().map((w) => ({ data: Float32Array.from(w.dataSync()), shape: [...w.shape] }));
  m.dispose();
  const replica = await DataReplica.load({ type: "load", v: PROTOCOL_VERSION, id: 1, role: "replica", topology, optimizer: { name: "sgd", learningRate: 0.01 }, loss: "binaryCrossentropy", replicaBatch: 8, stepTimeoutMs: 60_000, attachments: [] }, weights);
  const batch = zooBatch({ ...ZOO_MODELS.sentiment, input: [100], vocab: 500 }, 8) as { x: Tensorlike; y: Tensorlike };
  const alone = async (data: Float32Array) => ({ data, stats: { waitMs: 0, commMs: 0, bytesSent: 0 } });
  const reports = [];
  for (let i = 0; i < 7; i++) {
    const r = await replica.train(1, batch.x, batch.y, alone);
    if (r.slow) reports.push({ step: i, ...r.slow });
  }
  replica.dispose();
  tf.setBackend("cpu");
  return reports;
}

test("a slow slice is reported once, a few steps in, with the native step's layers", async () => {
  const reports = await slowReportOn(NATIVE_BACKEND);
  assert.equal(reports.length, 1, JSON.stringify(reports));
  const r = reports[0]!;
  assert.equal(r.by, "layers");
  assert.ok(r.measuredMs > 2 * r.predictedMs && r.gflops > 0, JSON.stringify(r));
  assert.match(r.top[0]!.name, /LSTM/);
  assert.match(slowStepLine({ rank: 0, ...r }), /^slow step: rank 0's slice computed in .* ms, \d+\.\dx what its FLOPs predict at the .* GFLOP\/s it measured for a matrix product; the time went to these layers: lstm\S* \(LSTM\) \d+%/);
});

test("by TF.js's autodiff, the report names the kernels dispatched, with their counts", async () => {
  process.env.MESHTRAIN_NATIVE_STEP = "0";
  try {
    const reports = await slowReportOn(NATIVE_BACKEND);
    assert.equal(reports.length, 1, JSON.stringify(reports));
    assert.equal(reports[0]!.by, "kernels");
    assert.ok(reports[0]!.top.every((k) => (k.count ?? 0) > 0) && reports[0]!.top.length > 3, JSON.stringify(reports[0]));
  } finally {
    delete process.env.MESHTRAIN_NATIVE_STEP;
  }
});
