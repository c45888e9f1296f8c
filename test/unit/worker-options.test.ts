import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "../../sdk/errors/errors";
import { checkWorkerOptions } from "../../sdk/worker/main";

const base = { host: "127.0.0.1", port: 0, maxFrameBytes: 1 << 20, exitWithDriver: false };

test("a worker never listens without a token, least of all beyond loopback", () => {
  assert.throws(() => checkWorkerOptions({ ...base, token: undefined }), (e: unknown) => e instanceof ConfigError && /needs the cluster token/.test(e.message));
  assert.throws(
    () => checkWorkerOptions({ ...base, host: "0.0.0.0", token: undefined }),
    (e: unknown) => e instanceof ConfigError && /refusing to listen on 0\.0\.0\.0 without a token/.test(e.message),
  );
  assert.throws(() => checkWorkerOptions({ ...base, token: "short" }), (e: unknown) => e instanceof ConfigError && /at least 16/.test(e.message));
  checkWorkerOptions({ ...base, host: "0.0.0.0", token: "a-long-enough-secret" });
});
