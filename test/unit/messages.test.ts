import assert from "node:assert/strict";
import { test } from "node:test";
import { MessageSchema } from "../../sdk/protocol/messages";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";

const v = PROTOCOL_VERSION;

test("valid messages of each kind parse", () => {
  const samples = [
    { type: "join", v, id: 1, session: "s", backend: "auto", threads: 1, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 10000, heartbeatIdleTimeoutMs: 600000 },
    { type: "step", v, id: 2, step: 0, epoch: 0, weight: 0.5, attachments: [{ dtype: "float32", shape: [2, 3] }] },
    { type: "stepDone", v, re: 2, step: 0, loss: 0.1, computeMs: 1, commMs: 2, waitMs: 3, applyMs: 4, startedAt: 1.7e12 },
    { type: "load", v, id: 3, role: "replica", topology: { class_name: "Sequential" }, optimizer: { name: "adam" }, loss: "meanSquaredError", replicaBatch: 8, stepTimeoutMs: 1000, attachments: [] },
    { type: "load", v, id: 3, role: "stage", topology: {}, optimizer: { name: "sgd" }, loss: "hinge", stepTimeoutMs: 1000, attachments: [], stage: { index: 0, count: 2, from: 0, to: 1, inputShape: [4], feeds: [0], heads: [], actions: [{ kind: "F", micro: 0 }, { kind: "B", micro: 0 }], microBatches: 1, microBatchSize: 8 } },
    { type: "load", v, id: 3, role: "ps-worker", topology: {}, optimizer: { name: "sgd" }, loss: "hinge", stepTimeoutMs: 1000, attachments: [], replicaBatch: 8, mode: "sync", shards: [[0, 1]], state: [[]] },
    { type: "load", v, id: 3, role: "ps-server", optimizer: { name: "sgd" }, loss: "hinge", stepTimeoutMs: 1000, attachments: [], index: 0, mode: "async", workers: 2, variables: [{ index: 0, shape: [2] }], state: [] },
    { type: "error", v, re: 4, error: { code: "MT_ERR_MODEL", message: "no" } },
  ];
  for (const m of samples) {
    const r = MessageSchema.safeParse(m);
    assert.ok(r.success, `${m.type}: ${r.success ? "" : r.error.message}`);
  }
});

test("optimizer defaults are filled in by the schema", () => {
  const r = MessageSchema.parse({ type: "load", v, id: 3, role: "replica", topology: {}, optimizer: { name: "momentum" }, loss: "hinge", replicaBatch: 4, stepTimeoutMs: 1000, attachments: [] });
  assert.equal(r.type, "load");
  if (r.type === "load") assert.deepEqual(r.optimizer, { name: "momentum", learningRate: 0.01, momentum: 0.9, useNesterov: false });
});

test("messages that are wrong in any way are refused", () => {
  const bad = [
    { type: "join", v: 99, id: 1, session: "s", backend: "auto", heartbeatIntervalMs: 1, heartbeatTimeoutMs: 1 },
    { type: "teleport", v },
    { type: "step", v, id: 2, step: -1, epoch: 0, weight: 0.5, attachments: [] },
    { type: "step", v, id: 2, step: 0, epoch: 0, weight: 1.5, attachments: [] },
    { type: "step", v, id: 2, step: 0, epoch: 0, weight: 0.5, attachments: [], extra: "field" },
    { type: "load", v, id: 3, role: "replica", topology: {}, optimizer: { name: "adam", code: "process.exit()" }, loss: "hinge", replicaBatch: 4, stepTimeoutMs: 1000, attachments: [] },
    { type: "load", v, id: 3, role: "replica", topology: {}, optimizer: { name: "adam" }, loss: "myCustomLoss", replicaBatch: 4, stepTimeoutMs: 1000, attachments: [] },
    // Each role's fields are required where it needs them, and no role takes another's.
    { type: "load", v, id: 3, topology: {}, optimizer: { name: "adam" }, loss: "hinge", replicaBatch: 4, stepTimeoutMs: 1000, attachments: [] },
    { type: "load", v, id: 3, role: "sorcerer", topology: {}, optimizer: { name: "adam" }, loss: "hinge", stepTimeoutMs: 1000, attachments: [] },
    { type: "load", v, id: 3, role: "stage", topology: {}, optimizer: { name: "adam" }, loss: "hinge", stepTimeoutMs: 1000, attachments: [] },
    { type: "load", v, id: 3, role: "ps-worker", topology: {}, optimizer: { name: "adam" }, loss: "hinge", replicaBatch: 4, stepTimeoutMs: 1000, attachments: [], mode: "sync", state: [] },
    { type: "load", v, id: 3, role: "ps-server", topology: {}, optimizer: { name: "adam" }, loss: "hinge", stepTimeoutMs: 1000, attachments: [], index: 0, mode: "async", workers: 2, variables: [], state: [] },
    { type: "load", v, id: 3, role: "replica", topology: {}, optimizer: { name: "adam" }, loss: "hinge", replicaBatch: 4, stepTimeoutMs: 1000, attachments: [], shards: [[0]] },
    { type: "step", v, id: 2, step: 0, epoch: 0, weight: 0.5, attachments: [{ dtype: "float64", shape: [1] }] },
  ];
  for (const m of bad) assert.equal(MessageSchema.safeParse(m).success, false, JSON.stringify(m));
});
