import assert from "node:assert/strict";
import { test } from "node:test";
import { StateError } from "../../sdk/errors/errors";
import { RUN_MEMBERS, withAwaitHint } from "../../sdk/cluster/await-hint";

test("a fit's promise read as its run says 'did you forget await?', naming the call; awaited, it is the run", async () => {
  assert.ok(["throughput", "summary", "history", "timeline", "byEpoch"].every((m) => RUN_MEMBERS.includes(m)), RUN_MEMBERS.join(", "));
  const run = { samples: 1 };
  const p = withAwaitHint(Promise.resolve(run), "cluster.fit(...)", RUN_MEMBERS) as Promise<typeof run> & { throughput?: () => number };
  assert.throws(
    () => p.throughput!(),
    (e: unknown) => e instanceof StateError && /cluster\.fit\(\.\.\.\) returned a Promise, not its result: did you forget await\? \(read \.throughput/.test(e.message),
  );
  assert.equal(await p, run);
  assert.deepEqual(Object.keys(p), [], "nothing enumerable added");
  // A rejected fit still rejects, once, with its own error.
  await assert.rejects(withAwaitHint(Promise.reject(new Error("lost")), "cluster.fit(...)", RUN_MEMBERS), /lost/);
});
