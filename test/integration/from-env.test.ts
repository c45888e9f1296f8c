import assert from "node:assert/strict";
import * as path from "node:path";
import { describe, test } from "node:test";
import { allExited, startNode, type Joiner } from "../helpers/joining";
import { freePort, isAlive, waitFor } from "../helpers/processes";

/**
 * cluster().fromEnv(): one script run on every node, torchrun-style. Three real processes on
 * 127.0.0.1 with the variables torchrun (or Slurm) sets: rank 0 drives and starts its own
 * worker, ranks 1 and 2 become workers. Training equals model.fit, every process ends when rank 0
 * closes the cluster, and when rank 0 dies instead.
 */

const TOKEN = "spmd-test-token-0123456789abcdef";
const SCRIPT = path.join(__dirname, "..", "helpers", "spmd-script.js");

function rank(r: number, n: number, port: number, args: string[], env: NodeJS.ProcessEnv): Joiner {
  return startNode([SCRIPT, String(port), ...args], { token: TOKEN, env: { ...env, MESHTRAIN_DRIVER: "", RANK: undefined, WORLD_SIZE: undefined, SLURM_PROCID: undefined, TF_CONFIG: undefined, ...rankVars(r, n, env) } });
}

function rankVars(r: number, n: number, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return env.SLURM_JOB_NODELIST !== undefined ? { SLURM_PROCID: String(r), SLURM_NTASKS: String(n), SLURM_LOCALID: String(r) } : { RANK: String(r), WORLD_SIZE: String(n), LOCAL_RANK: String(r), MASTER_ADDR: "127.0.0.1", MASTER_PORT: "29500" };
}

/** The pids rank 0's driver reports for its workers (its own worker's first). */
async function workerPids(driver: Joiner): Promise<number[]> {
  await waitFor("rank 0's driver to list its workers", () => /driver: workers \[/.test(driver.output()), 120_000);
  return JSON.parse(/driver: workers (\[[^\]]*\])/.exec(driver.output())![1]!) as number[];
}

describe("cluster().fromEnv(): the same script on every rank", () => {
  test("torchrun's variables: ranks 1 and 2 start first and wait for rank 0; data parallelism equals model.fit; every process exits 0", async () => {
    const port = await freePort();
    const others = [2, 1].map((r) => rank(r, 3, port, ["data"], {}));
    await waitFor("the other ranks to say the driver does not answer yet", () => others.every((j) => /does not answer yet/.test(j.output())), 30_000);
    const driver = rank(0, 3, port, ["data"], {});
    const all = [driver, ...others];
    try {
      assert.deepEqual(await allExited(all, 180_000), [0, 0, 0], all.map((j) => j.output()).join("\n---\n"));
      const result = JSON.parse(/result (\{.*\})/.exec(driver.output())![1]!) as { size: number; difference: number };
      assert.equal(result.size, 3);
      assert.ok(result.difference < 1e-4, `relative difference ${result.difference}`);
      const pids = await workerPids(driver);
      assert.deepEqual(pids.slice(1), [others[1]!.child.pid, others[0]!.child.pid], "ranks 1 and 2 are the processes started as RANK=1 and RANK=2");
      assert.ok(!isAlive(pids[0]!), `rank 0's own worker (pid ${pids[0]}) outlived its driver`);
      assert.match(others[0]!.output(), /joined ws:\/\/127\.0\.0\.1:\d+ as rank 2 of 3/);
      assert.doesNotMatch(others[0]!.output(), /result/, "code after launch() ran on rank 2");
    } finally {
      for (const j of all) j.kill();
    }
  });

  test("Slurm's variables (the driver on the first node of SLURM_JOB_NODELIST), a pipeline; when rank 0 dies, every rank's worker ends", async () => {
    const port = await freePort();
    const env = { SLURM_JOB_NODELIST: "localhost" };
    const all = [0, 1].map((r) => rank(r, 2, port, ["pipeline", "hold"], env));
    try {
      const pids = await workerPids(all[0]!);
      assert.equal(pids[1], all[1]!.child.pid);
      all[0]!.kill();
      assert.equal(await all[0]!.exited, "SIGKILL");
      assert.equal(await all[1]!.exited, 1, `rank 1 exits 1 when its driver vanishes:\n${all[1]!.output()}`);
      await waitFor(`rank 0's own worker (pid ${pids[0]}) to exit after its driver died`, () => !isAlive(pids[0]!), 15_000);
    } finally {
      for (const j of all) j.kill();
    }
  });
});
