import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { VERSION } from "../../sdk/protocol/sdk-version";

test("VERSION is package.json's version", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "..", "package.json"), "utf8")) as { version: string };
  assert.equal(VERSION, pkg.version);
});
