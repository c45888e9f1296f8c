import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, WorkerLostError, type ClusterBuilder } from "../../sdk/index";
import { deepClassifier } from "../helpers/models";
import { isAlive } from "../helpers/processes";
import { TEST_HEARTBEAT } from "../helpers/heartbeat";

/**
 * Every strategy, a worker killed (SIGKILL) and, separately, frozen (SIGSTOP) mid-fit: the fit
 * ends in a WorkerLostError naming that worker within twice the heartbeat timeout, never a hang,
 * and no process is left behind. (Async parameter servers carry on instead: see
 * parameter-servers.test.ts.)
 */

tf.enableProdMode();
const HEARTBEAT = TEST_HEARTBEAT;

const strategies: Array<[string, () => ClusterBuilder, number]> = [
  ["data", () => cluster().workers(2).strategy("data"), 1],
  ["model", () => cluster().workers(2).strategy("model"), 1],
  ["pipeline", () => cluster().workers(3).strategy("pipeline", { microBatches: 2, schedule: "1f1b" }), 1],
  ["hybrid", () => cluster().workers(4).strategy("hybrid", { stages: 2 }), 3],
  ["ps sync", () => cluster().workers(2).ps(1).strategy("ps", { mode: "sync" }), 1],
];

for (const [name, make, victim] of strategies) {
  describe(`strategy ${name}`, () => {
    for (const signal of ["SIGKILL", "SIGSTOP"] as const) {
      test(`a worker ${signal === "SIGKILL" ? "killed" : "frozen"} mid-fit is a WorkerLostError naming it, within twice the heartbeat timeout`, async (t) => {
        const c = await make().backend("cpu").heartbeat(HEARTBEAT).launch();
        const pids = c.workers.map((w) => w.info.pid);
        const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 50_000, seed: 1 });
        let at = 0;
        try {
          const err = await c
            .fit(deepClassifier(6, 3, { hidden: 2, width: 16 }), ds, {
              batchSize: 8,
              onStep: (s) => {
                if (s.step === 3) {
                  at = performance.now();
                  process.kill(pids[victim]!, signal);
                }
              },
            })
            .then(() => undefined, (e: unknown) => e);
          const ms = performance.now() - at;
          t.diagnostic(`${ms.toFixed(0)} ms: ${(err as Error).message.split("\n")[0]}`);
          assert.ok(err instanceof WorkerLostError, String(err));
          const how = signal === "SIGKILL" ? /exited \(killed by SIGKILL\)/ : new RegExp(`was silent for \\d+ ms \\(heartbeat timeout ${HEARTBEAT.timeoutMs} ms\\)`);
          assert.match((err as Error).message, new RegExp(`worker rank ${victim} \\(ws://127\\.0\\.0\\.1:\\d+, pid ${pids[victim]}\\) ${how.source}`));
          assert.ok(ms < 2 * HEARTBEAT.timeoutMs, `reported ${ms.toFixed(0)} ms after the ${signal}`);
          assert.equal(c.state, "failed");
        } finally {
          if (signal === "SIGSTOP") process.kill(pids[victim]!, "SIGKILL");
          await c.close();
        }
        for (const pid of pids) assert.ok(!isAlive(pid), `worker ${pid} is gone`);
      });
    }
  });
}

test("async parameter servers record a frozen worker as departed and finish without it", async () => {
  const c = await cluster().workers(3).ps(1).strategy("ps", { mode: "async" }).backend("cpu").heartbeat(HEARTBEAT).launch();
  const pids = c.workers.map((w) => w.info.pid);
  try {
    const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 2400, seed: 1 });
    const run = await c.fit(deepClassifier(6, 3, { hidden: 2, width: 16 }), ds, { batchSize: 24, onStep: (s) => void (s.step === 3 && process.kill(pids[2]!, "SIGSTOP")) });
    assert.equal(run.departures.length, 1);
    assert.match(run.departures[0]!.cause, new RegExp(`worker rank 2 .* was silent for \\d+ ms \\(heartbeat timeout ${HEARTBEAT.timeoutMs} ms\\)`));
    assert.equal(run.pushes.reduce((a, p) => a + p.samples, 0) + 8 * run.departures[0]!.alreadyApplied, ds.size, "every slice trained once");
    assert.ok(!isAlive(pids[2]!), "the frozen worker was fenced (killed) when the fit went on without it");
  } finally {
    if (isAlive(pids[2]!)) process.kill(pids[2]!, "SIGKILL");
    await c.close();
  }
});
