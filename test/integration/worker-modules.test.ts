import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { cluster, datasets, type ClusterBuilder } from "../../sdk/index";
import { smallClassifier } from "../helpers/models";
import { startCliWorker } from "../helpers/processes";

/**
 * The process boundary, checked on real worker processes: every worker of a data-parallel, a
 * pipeline and a parameter-server fit reports (through a preloaded hook) the modules it loaded,
 * and none of them is driver code: no builder, strategy table or planner, fit loop, launcher,
 * figure or record.
 */
const SDK = path.join(__dirname, "..", "..", "sdk");
const DRIVER_SIDE = ["cluster", "launchers", "strategies", "driver", "members", "viz", "metrics"];

interface Report {
  pid: number;
  argv: string[];
  modules: string[];
}

async function reportsOf(builder: ClusterBuilder, dir: string): Promise<Report[]> {
  const c = await builder.launch();
  try {
    await c.fit(smallClassifier(6, 3), datasets.synthetic({ inputShape: [6], classes: 3, size: 32, seed: 1 }), { epochs: 1, batchSize: 8, progress: false });
  } finally {
    await c.close();
  }
  // close() returns once the workers exited; their reports are written on exit.
  return fs.readdirSync(dir).map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as Report);
}

test("worker processes load no driver code, whatever role they play", async () => {
  const hook = path.join(__dirname, "..", "helpers", "module-report.js");
  const saved = process.env.NODE_OPTIONS;
  process.env.NODE_OPTIONS = `${saved ?? ""} --require ${hook}`.trim();
  try {
    const runs: Array<[string, ClusterBuilder, string]> = [
      ["data", cluster().workers(2).strategy("data"), "roles/data/replica.js"],
      ["pipeline", cluster().workers(2).strategy("pipeline", { microBatches: 2 }), "roles/pipeline/stage.js"],
      ["ps", cluster().workers(2).ps(1).strategy("ps", { mode: "sync" }), "roles/ps/param-server.js"],
    ];
    for (const [name, builder, role] of runs) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `meshtrain-modules-${name}-`));
      process.env.MESHTRAIN_MODULE_REPORT = dir;
      const reports = await reportsOf(builder, dir);
      const workers = reports.filter((r) => r.argv.some((a) => a.endsWith(path.join("worker", "local-main.js"))));
      assert.equal(workers.length, name === "ps" ? 3 : 2, `${name}: one report per worker process (${reports.length} reports)`);
      for (const r of workers) {
        const ours = r.modules.filter((m) => m.startsWith(SDK)).map((m) => path.relative(SDK, m));
        assert.ok(ours.includes(path.join("worker", "host.js")), `${name}: the hook saw the worker's own modules`);
        assert.ok(ours.includes(role), `${name}: the role's program ${role} was loaded`);
        const driver = ours.filter((m) => DRIVER_SIDE.includes(m.split(path.sep)[0]!));
        assert.deepEqual(driver, [], `${name}: worker pid ${r.pid} loaded driver code`);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    }
    // A worker started elsewhere runs through the command line (`meshtrain worker`), which loads only the worker's code.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-modules-cli-"));
    process.env.MESHTRAIN_MODULE_REPORT = dir;
    const token = "worker-modules-test-token-0123456789";
    const w = await startCliWorker(token);
    const c = await cluster().connect([w.url]).token(token).launch();
    await c.fit(smallClassifier(6, 3), datasets.synthetic({ inputShape: [6], classes: 3, size: 16, seed: 2 }), { epochs: 1, batchSize: 8, progress: false }).finally(() => c.close());
    await new Promise<void>((done) => (w.child.once("exit", () => done()), w.child.kill("SIGTERM")));
    const [cli] = fs.readdirSync(dir).map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as Report);
    const ours = cli!.modules.filter((m) => m.startsWith(SDK)).map((m) => path.relative(SDK, m));
    assert.ok(ours.includes(path.join("cli", "main.js")) && ours.includes(path.join("worker", "host.js")), "the command line's worker reported its modules");
    assert.deepEqual(ours.filter((m) => DRIVER_SIDE.includes(m.split(path.sep)[0]!)), [], "`meshtrain worker` loaded driver code");
    fs.rmSync(dir, { recursive: true, force: true });
  } finally {
    if (saved === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = saved;
    delete process.env.MESHTRAIN_MODULE_REPORT;
  }
});
