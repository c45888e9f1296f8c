import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import {
  AuthError,
  ConfigError,
  ERROR_CLASSES,
  isMeshtrainError,
  MeshtrainError,
  WorkerLostError,
} from "../../sdk/errors/errors";
import { fromWireError, toWireError } from "../../sdk/protocol/wire-error";

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

test("a plain exception becomes MT_ERR_WORKER without a stack trace", () => {
  const wire = toWireError(new TypeError("x is undefined"));
  assert.equal(wire.code, "MT_ERR_WORKER");
  assert.equal(wire.message, "TypeError: x is undefined");
  assert.ok(!JSON.stringify(wire).includes("at "));
  const unknown = fromWireError({ code: "MT_ERR_FROM_THE_FUTURE", message: "?" });
  assert.equal(unknown.code, "MT_ERR_WORKER");
});

test("docs/errors.md explains every error code", () => {
  const doc = fs.readFileSync(path.join(__dirname, "..", "..", "..", "docs", "errors.md"), "utf8");
  for (const code of Object.keys(ERROR_CLASSES)) assert.match(doc, new RegExp(`\\| \`${code}\` \\|`), `${code} is not in docs/errors.md`);
});
