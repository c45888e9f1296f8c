import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import {
  AuthError,
  DataError,
  ConfigError,
  ERROR_CLASSES,
  isMeshtrainError,
  MeshtrainError,
  ModelError,
  WorkerError,
  WorkerLostError,
} from "../../sdk/errors/errors";
import { fromWireError, toWireError, WireErrorSchema, type WireError } from "../../sdk/protocol/wire-error";
import { MessageSchema } from "../../sdk/protocol/messages";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";

test("every error has a stable code, its class, and a message that ends with the hint", () => {
  for (const [code, Cls] of Object.entries(ERROR_CLASSES)) {
    const e = new Cls("something broke", { hint: "do this next", details: { rank: 2 } });
    assert.equal(e.code, code);
    assert.ok(e instanceof MeshtrainError);
    assert.ok(e instanceof Cls);
    assert.ok(e instanceof Error);
    assert.match(e.message, /something broke\nhelp: do this next$/);
    assert.equal(e.details.rank, 2);
  }
});

test("a subclass does not match another code", () => {
  const e = new AuthError("nope");
  assert.ok(!(e instanceof ConfigError));
  assert.ok(!(new Error("plain") instanceof MeshtrainError));
  assert.ok(!isMeshtrainError({ code: "MT_ERR_AUTH" }));
});

test("instanceof works across two copies of the errors module (a re-run notebook cell)", () => {
  const modPath = require.resolve("../../sdk/errors/errors");
  const first = require(modPath) as typeof import("../../sdk/errors/errors");
  delete require.cache[modPath];
  const second = require(modPath) as typeof import("../../sdk/errors/errors");
  assert.notEqual(first.WorkerLostError, second.WorkerLostError);
  const made = new second.WorkerLostError("gone");
  assert.ok(made instanceof first.WorkerLostError);
  assert.ok(made instanceof first.MeshtrainError);
  assert.ok(!(made instanceof first.AuthError));
});

test("errors cross the wire as data and come back as the same class with who reported them", () => {
  const original = new WorkerLostError("rank 1 vanished", { hint: "relaunch", details: { step: 4 } });
  const wire = toWireError(original);
  assert.deepEqual(Object.keys(wire).sort(), ["code", "details", "hint", "message", "retryable"]);
  const back = fromWireError(JSON.parse(JSON.stringify(wire)), { rank: 3, address: "ws://x:1" });
  assert.ok(back instanceof WorkerLostError);
  assert.equal(back.summary, "rank 1 vanished");
  assert.deepEqual(back.details, { step: 4, rank: 3, address: "ws://x:1" });
});

test("an error's cause crosses the wire with it, as a validated message, and comes back as its cause", () => {
  const root = new RangeError("offset 9 is past the end");
  const middle = new ModelError("the worker cannot build the model", { cause: root });
  const top = new WorkerError("load failed on the worker", { cause: middle });
  const wire = toWireError(top);
  const parsed = MessageSchema.parse({ type: "error", v: PROTOCOL_VERSION, re: 1, error: JSON.parse(JSON.stringify(wire)) });
  assert.equal(parsed.type, "error");
  const back = fromWireError((parsed as { error: WireError }).error, { rank: 2 });
  assert.ok(back instanceof WorkerError);
  const cause = back.cause as MeshtrainError;
  assert.ok(cause instanceof ModelError, "the cause is rebuilt with its class");
  assert.equal(cause.summary, "the worker cannot build the model");
  const rootBack = cause.cause as MeshtrainError;
  assert.equal(rootBack.code, "MT_ERR_WORKER");
  assert.equal(rootBack.summary, "RangeError: offset 9 is past the end");
  // A cycle of causes is cut after a few levels instead of growing without end.
  const a = new Error("a");
  const b = new Error("b", { cause: a });
  (a as { cause?: unknown }).cause = b;
  let depth = 0;
  for (let w: WireError | undefined = toWireError(a); w; w = w.cause) depth++;
  assert.equal(depth, 4);
});

test("a plain exception becomes MT_ERR_WORKER and keeps its stack, rebuilt with it; meshtrain's own errors carry none", () => {
  const thrown = new TypeError("x is undefined");
  const wire = toWireError(thrown);
  assert.equal(wire.code, "MT_ERR_WORKER");
  assert.equal(wire.message, "TypeError: x is undefined");
  assert.equal(wire.stack, thrown.stack);
  const rebuilt = fromWireError(WireErrorSchema.parse(JSON.parse(JSON.stringify(wire))));
  assert.equal(rebuilt.stack, thrown.stack, "the stack is where it was thrown, on the worker");
  assert.equal(toWireError(new DataError("bad")).stack, undefined);
  const long = new Error("deep");
  long.stack = "x".repeat(100_000);
  assert.ok(WireErrorSchema.safeParse(toWireError(long)).success, "a huge stack is trimmed, not refused");
  const unknown = fromWireError({ code: "MT_ERR_FROM_THE_FUTURE", message: "?" });
  assert.equal(unknown.code, "MT_ERR_WORKER");
});

test("docs/errors.md explains every error code", () => {
  const doc = fs.readFileSync(path.join(__dirname, "..", "..", "..", "docs", "errors.md"), "utf8");
  for (const code of Object.keys(ERROR_CLASSES)) assert.match(doc, new RegExp(`\\| \`${code}\` \\|`), `${code} is not in docs/errors.md`);
});
