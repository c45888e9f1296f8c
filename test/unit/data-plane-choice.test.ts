import assert from "node:assert/strict";
import { test } from "node:test";
import { cluster } from "../../sdk/index";
import { chooseDataPlane, dataPlaneLine } from "../../sdk/driver/data-plane-choice";
import { ConfigError } from "../../sdk/errors/errors";
import type { WorkerInfo } from "../../sdk/protocol/messages";

const info = (dataPlane: WorkerInfo["dataPlane"]): WorkerInfo => ({
  pid: 1, hostname: "h", version: "0", node: "v20", backend: "native", device: "cpu", memoryBytes: 1e9, cpus: 2, gflops: 10, kernelOverheadUs: 5, notes: [],
  ...(dataPlane ? { dataPlane } : {}),
});
const able = { rank: 0, address: "ws://127.0.0.1:7070", info: info({ native: true }) };
const unable = { rank: 1, address: "ws://10.0.0.2:7070", info: info({ native: false, why: "the native addon is missing: OpenBLAS was not found" }) };
const older = { rank: 2, address: "ws://10.0.0.3:7070", info: info(undefined) };
const spec = (dataPlane?: "auto" | "native" | "websocket") => cluster().workers(3).dataPlane(dataPlane ?? "auto").spec();

test("auto takes the native data plane only when every ring member has it", () => {
  assert.deepEqual(chooseDataPlane(spec(), [able, { ...able, rank: 1 }]).path, "native");
  const fallback = chooseDataPlane(spec(), [able, unable, older]);
  assert.equal(fallback.path, "websocket");
  assert.match(fallback.why, /rank 1 \(ws:\/\/10\.0\.0\.2:7070\): the native addon is missing: OpenBLAS was not found; rank 2 .*without the native data plane/);
  assert.match(dataPlaneLine(fallback), /^all-reduce over the WebSocket links \(reduced in JavaScript\): not every worker/);
});

test('"websocket" is kept as asked; "native" where a worker cannot is a ConfigError naming it, never a silent fallback', () => {
  assert.deepEqual(chooseDataPlane(spec("websocket"), [able]), { path: "websocket", why: 'asked for with .dataPlane("websocket")' });
  assert.throws(() => chooseDataPlane(spec("native"), [able, unable]), (e: unknown) => e instanceof ConfigError && /rank 1 .*OpenBLAS was not found/.test(e.message) && /dataPlane\("auto"\)/.test(e.hint ?? ""));
});

test("a bad dataPlane() argument is refused with what to pass", () => {
  assert.throws(() => cluster().dataPlane("tcp" as "native"), /dataPlane\(path\)[\s\S]*"auto", "native" or "websocket"/);
});
