import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, TimeoutError, type ClusterBuilder } from "../../sdk/index";
import { captureOutput } from "../helpers/captured-output";
import { deepClassifier } from "../helpers/models";
import { isAlive } from "../helpers/processes";

/**
 * A worker frozen (SIGSTOP) while its heartbeat timeout is far away: the fit stalls. After
 * stallMs without a finished step the driver prints which operation waits, which ranks arrived
 * at it and which did not, and what each last reported; at the step timeout the error carries
 * the same report. In data, pipeline and sync parameter-server runs.
 */

tf.enableProdMode();
// A worker is "silent" to the report after two heartbeat intervals unheard. On a swamped machine a
// healthy worker went 0.7-5 s unheard under 200 ms pings (and 2.4 s under 1 s pings, with other
// tests beside it), and was reported silent, not arrived.
const HEARTBEAT = { intervalMs: 2000, timeoutMs: 120_000 };
const TIMEOUTS = { stepMs: 20_000, stallMs: 8000 };

const runs: Array<{ name: string; make: () => ClusterBuilder; waiting: RegExp }> = [
  { name: "data, 2 replicas", make: () => cluster().workers(2).strategy("data"), waiting: /^ {2}waiting: the all-reduce of step \d+$/m },
  {
    name: "pipeline, 2 stages",
    make: () => cluster().workers(2).strategy("pipeline", { stages: 2, microBatches: 2 }),
    waiting: /^ {2}waiting: the gradient of micro-batch \d of step \d+ from the next stage$/m,
  },
  {
    name: "sync parameter servers, 2 workers",
    make: () => cluster().workers(2).ps(1).strategy("ps", { mode: "sync" }),
        // Sync servers let a worker run one step ahead: rank 0 may be done with both steps sent and wait for the driver.
    waiting: /^ {2}waiting: the (pull of the parameters for|push of|replies to) step \d+$/m,
  },
];

/** The seconds a report says `who` was last heard from. */
function silence(report: string, who: string): number {
  const m = new RegExp(`^ {2}${who}: .*?last heard from (\\d+(?:\\.\\d)?) s ago`, "m").exec(report);
  assert.ok(m, `no line for ${who} in:\n${report}`);
  return Number(m[1]);
}

function checkReport(report: string, waiting: RegExp): void {
  assert.match(report, /^meshtrain: stalled: no step has finished for \d+(\.\d)? s/);
  assert.match(report, waiting);
  assert.match(report, /^ {2}arrived: rank 0$/m);
  assert.match(report, /^ {2}missing: rank 1$/m);
  assert.ok(silence(report, "rank 1") > silence(report, "rank 0"), report);
}

describe("stall reports", () => {
  for (const { name, make, waiting } of runs) {
    test(`${name}: a frozen worker is reported after stallMs, and the step timeout's error carries the report`, async () => {
      const c = await make().backend("cpu").heartbeat(HEARTBEAT).timeouts(TIMEOUTS).launch();
      const pids = [...c.workers, ...c.parameterServers].map((w) => w.info.pid);
      const victim = c.workers[1]!.info.pid;
      const out = captureOutput();
      try {
        const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 50_000, seed: 1 });
        // A swamped machine may print a report while the fit starts up: the one to check comes after the freeze.
        let before = 0;
        const freeze = (): void => {
          before = out.lines("stderr").length;
          process.kill(victim, "SIGSTOP");
        };
        const err = await c
          .fit(deepClassifier(6, 3, { hidden: 2, width: 16 }), ds, { batchSize: 8, onStep: (s) => void (s.step === 3 && freeze()) })
          .then(() => assert.fail("fit resolved"), (e: unknown) => e);
        out.restore();
        const printed = out.lines("stderr").slice(before).join("\n");
        const first = printed.indexOf("meshtrain: stalled:");
        assert.ok(first >= 0, `no stall report was printed:\n${printed}`);
        const report = printed.slice(first).split(/\n(?! )/)[0]!;
        checkReport(report, waiting);
        assert.ok(err instanceof TimeoutError, String(err));
        const inError = err.message.slice(err.message.indexOf("meshtrain: stalled:"));
        checkReport(inError, waiting);
        // Frozen since before the report: silent for most of the step timeout when it expired.
        assert.ok(silence(inError, "rank 1") >= 2, inError);
      } finally {
        out.restore();
        process.kill(victim, "SIGKILL");
        await c.close();
      }
      for (const pid of pids) assert.ok(!isAlive(pid), `process ${pid} is gone`);
    });
  }
});
