import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster, ConfigError, LaunchError, TimeoutError } from "../../sdk/index";
import { fitsLikeModelFit } from "../helpers/fit-check";
import { processesMatching, waitFor } from "../helpers/processes";
import { startSlurm, type TestSlurm } from "../helpers/slurm";
import { watchOutput } from "../helpers/watch-output";
import { withOwnBundleCache } from "../helpers/bundle-cache";

/**
 * cluster().slurm() and fromEnv() under srun, against a real slurmctld and two slurmd nodes
 * started by the test. Training equals model.fit; the job is cancelled by close(), ends when the
 * driver dies, and is cancelled when its launch is interrupted; a job that fails, stays
 * pending or is refused is a typed error in Slurm's own words.
 */

tf.enableProdMode();
const SCRIPTS = path.join(__dirname, "..", "helpers");

function driver(how: object): { child: ReturnType<typeof spawn>; match: (re: RegExp, what: string) => Promise<RegExpMatchArray> } {
  const child = spawn(process.execPath, [path.join(SCRIPTS, "launcher-driver-script.js"), JSON.stringify(how)], { stdio: ["ignore", "pipe", "pipe"] });
  const watched = watchOutput(child);
  return { child, match: (re, what) => watched.match(re, 90_000, what) };
}

describe("workers as a Slurm job", () => {
  let slurm: TestSlurm;
  before(async () => {
    slurm = await startSlurm();
  });
  after(() => slurm?.stop());

  test("slurm({ nodes: 2 }): the job's workers train to model.fit's result; notes name the job and its nodes; close() ends the job", async () => {
    const c = await cluster().slurm({ nodes: 2, outputDir: slurm.dir }).backend("cpu").launch();
    let id = "";
    try {
      const note = c.notes.find((n) => n.startsWith("Slurm job "));
      assert.match(note ?? "", /^Slurm job (\d+) on mtn\[1-2\], output in .*meshtrain-slurm-\d+\.out$/, c.notes.join("\n"));
      id = /Slurm job (\d+)/.exec(note!)![1]!;
      assert.equal(slurm.job(id).state, "RUNNING");
      await fitsLikeModelFit(c, { size: 96, seed: 3 });
    } finally {
      await c.close();
    }
    await waitFor(`job ${id} to end and its workers with it`, () => !["RUNNING", "COMPLETING"].includes(slurm.job(id).state) && processesMatching("worker --join").length === 0, 20_000);
  });

  test('ship: "sbcast": the worker bundle goes with the job to its nodes, each runs it from a folder of its own, and they train to model.fit', async () => {
    let id = "";
    try {
      await withOwnBundleCache(async () => {
        const c = await cluster().slurm({ nodes: 2, outputDir: slurm.dir, ship: "sbcast" }).backend("cpu").launch();
        try {
          id = /Slurm job (\d+)/.exec(c.notes.join("\n"))?.[1] ?? "";
          assert.ok(c.notes.some((n) => new RegExp(`^Slurm: the worker bundle \\w+ sent to the job's nodes by sbcast from ${slurm.dir}/meshtrain-bundle-\\w+\\.tar\\.gz$`).test(n)), c.notes.join("\n"));
          const commands = c.workers.map((w) => fs.readFileSync(`/proc/${w.info.pid}/cmdline`, "utf8").split("\0").join(" "));
          for (const node of ["mtn1", "mtn2"]) assert.ok(commands.some((cmd) => cmd.includes(`/meshtrain-${id}-${node}/meshtrain-worker-`)), commands.join("\n"));
          await fitsLikeModelFit(c, { size: 96, seed: 3 });
        } finally {
          await c.close();
        }
      });
    } finally {
      // What the job extracted on its nodes (one /tmp here).
      for (const f of fs.readdirSync(os.tmpdir()).filter((n) => id !== "" && n.startsWith(`meshtrain-${id}`))) fs.rmSync(path.join(os.tmpdir(), f), { recursive: true, force: true });
    }
  });

  test('ship: "shared": the worker bundle is extracted once into sharedDir, the nodes run it from there and train to model.fit; a second launch finds it', async () => {
    const shared = path.join(slurm.dir, "shared-bundles");
    try {
      await withOwnBundleCache(async () => {
        const launch = (): ReturnType<ReturnType<typeof cluster>["launch"]> => cluster().slurm({ nodes: 2, outputDir: slurm.dir, ship: "shared", sharedDir: shared }).backend("cpu").launch();
        const c = await launch();
        let key = "";
        try {
          const note = c.notes.find((n) => n.startsWith("Slurm: the worker bundle")) ?? c.notes.join("\n");
          key = /the worker bundle (\w+)/.exec(note)?.[1] ?? "";
          assert.equal(note, `Slurm: the worker bundle ${key} runs from ${shared}/${key} (extracted now)`);
          const commands = c.workers.map((w) => fs.readFileSync(`/proc/${w.info.pid}/cmdline`, "utf8").split("\0").join(" "));
          for (const cmd of commands) assert.ok(cmd.includes(`${shared}/${key}/meshtrain-worker-`), cmd);
          await fitsLikeModelFit(c, { size: 96, seed: 3 });
        } finally {
          await c.close();
        }
        const again = await launch();
        try {
          assert.ok(again.notes.includes(`Slurm: the worker bundle ${key} runs from ${shared}/${key} (already there)`), again.notes.join("\n"));
        } finally {
          await again.close();
        }
      });
    } finally {
      fs.rmSync(shared, { recursive: true, force: true });
    }
  });

  test("sharedDir without ship \"shared\", and ship \"shared\" without sharedDir, are refused as the options are given", () => {
    for (const o of [{ nodes: 1, sharedDir: "/shared" }, { nodes: 1, ship: "shared" as const }])
      assert.throws(() => cluster().slurm(o), (e: unknown) => e instanceof ConfigError && /ship "shared" and sharedDir go together/.test((e as Error).message));
  });

  test("srun -N2 of a script using fromEnv(): rank 0 on mtn1 (SLURM_STEP_NODELIST) drives, rank 1 joins; equals model.fit", async () => {
    const step = spawn("srun", ["-N2", "-n2", "--kill-on-bad-exit=1", process.execPath, path.join(SCRIPTS, "spmd-script.js"), "17071", "data"], { env: { ...process.env, MESHTRAIN_TOKEN: "slurm-spmd-token-0123456789abcdef" }, stdio: ["ignore", "pipe", "pipe"] });
    const watched = watchOutput(step);
    const code = await new Promise((resolve) => step.once("exit", resolve));
    assert.equal(code, 0, watched.output());
    const result = JSON.parse(/result (\{.*\})/.exec(watched.output())![1]!) as { size: number; difference: number };
    assert.equal(result.size, 2);
    assert.ok(result.difference < 1e-4, `relative difference ${result.difference}`);
    assert.match(watched.output(), /joined ws:\/\/mtn1:17071 as rank 1 of 2/);
  });

  test("a job that stays pending past the timeout is cancelled and reported with Slurm's reason", async () => {
    const launching = cluster().slurm({ nodes: 1, args: ["--begin=now+1hour"], timeoutMs: 3000, outputDir: slurm.dir }).backend("cpu").launch();
    await assert.rejects(launching, (e: unknown) => e instanceof TimeoutError && /^Slurm job (\d+) was still pending after 3 s \(reason: BeginTime\); it was cancelled/.test(e.message));
    const id = /Slurm job (\d+)/.exec(await launching.then(() => "", (e: Error) => e.message))![1]!;
    assert.equal(slurm.job(id).state, "CANCELLED");
  });

  test("a job whose workers cannot start, and one sbatch refuses, are LaunchErrors in Slurm's words", async () => {
    const failing = cluster().slurm({ nodes: 1, command: "/opt/no-node/bin/node x.js", outputDir: slurm.dir }).launch();
    await assert.rejects(failing, (e: unknown) => e instanceof LaunchError && /^Slurm job \d+ ended \(FAILED, exit code \d+:\d+, NonZeroExitCode\) before all its workers joined/.test(e.message) && /no-node/.test(e.message));
    await assert.rejects(cluster().slurm({ nodes: 1, partition: "nope" }).launch(), /sbatch refused the job \(exit 1\): sbatch: error: .*[Pp]artition/);
  });

  test("an interrupt while the job is pending cancels it; a driver killed outright ends its running job", async () => {
    const waiting = driver({ slurm: { nodes: 1, args: ["--begin=now+1hour"], outputDir: slurm.dir } });
    const id = await waitForJob("PENDING");
    waiting.child.kill("SIGINT");
    await waiting.match(/launch failed: AbortError: launch interrupted/, "the launch to end with AbortError");
    await waitFor(`job ${id} to be cancelled`, () => slurm.job(id).state === "CANCELLED", 10_000);

    const running = driver({ slurm: { nodes: 2, outputDir: slurm.dir } });
    await running.match(/launched \d+ \d+/, "the driver launching");
    const job = await waitForJob("RUNNING");
    running.child.kill("SIGKILL");
    await waitFor(`job ${job} to end after its driver died`, () => !["RUNNING", "COMPLETING"].includes(slurm.job(job).state) && processesMatching("worker --join").length === 0, 20_000);
  });

  /** The newest job in the queue once it is in `state`. */
  async function waitForJob(state: string): Promise<string> {
    let id = "";
    await waitFor(`a job ${state}`, () => {
      const out = spawnSync("squeue", ["-h", "-o", "%i %T"], { encoding: "utf8" }).stdout;
      const line = out.trim().split("\n").filter((l) => l.endsWith(` ${state}`)).pop();
      id = line?.split(" ")[0] ?? "";
      return id !== "";
    }, 30_000);
    return id;
  }
});
