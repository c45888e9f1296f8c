import assert from "node:assert/strict";
import { test } from "node:test";
import { MessageSchema } from "../../sdk/protocol/messages";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";

const v = PROTOCOL_VERSION;

test("valid messages of each kind parse", () => {
  const samples = [
    { type: "join", v, id: 1, session: "s", backend: "auto", threads: 1, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 10000 },
    { type: "step", v, id: 2, step: 0, epoch: 0, weight: 0.5, attachments: [{ dtype: "float32", shape: [2, 3] }] },
    { type: "stepDone", v, re: 2, step: 0, loss: 0.1, computeMs: 1, commMs: 2, waitMs: 3, applyMs: 4, startedAt: 1.7e12 },
    { type: "load", v, id: 3, topology: { class_name: "Sequential" }, optimizer: { name: "adam" }, loss: "meanSquaredError", attachments: [] },
    { type: "error", v, re: 4, error: { code: "MT_ERR_MODEL", message: "no" } },
  ];
  for (const m of samples) {
    const r = MessageSchema.safeParse(m);
    assert.ok(r.success, `${m.type}: ${r.success ? "" : r.error.message}`);
  }
});

test("optimizer defaults are filled in by the schema", () => {
  const r = MessageSchema.parse({ type: "load", v, id: 3, topology: {}, optimizer: { name: "momentum" }, loss: "hinge", attachments: [] });
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
    { type: "load", v, id: 3, topology: {}, optimizer: { name: "adam", code: "process.exit()" }, loss: "hinge", attachments: [] },
    { type: "load", v, id: 3, topology: {}, optimizer: { name: "adam" }, loss: "myCustomLoss", attachments: [] },
    { type: "step", v, id: 2, step: 0, epoch: 0, weight: 0.5, attachments: [{ dtype: "float64", shape: [1] }] },
  ];
  for (const m of bad) assert.equal(MessageSchema.safeParse(m).success, false, JSON.stringify(m));
});
