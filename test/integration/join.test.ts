import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as path from "node:path";
import { describe, test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { AuthError, cluster, datasets, LaunchError, TimeoutError } from "../../sdk/index";
import { offerHandshake } from "../../sdk/transport/handshake";
import { readJoinFrame, sendJoinFrame } from "../../sdk/transport/join-frames";
import { dial } from "../../sdk/transport/ws-endpoint";
import { allExited, startJoiner, type Joiner } from "../helpers/joining";
import { smallClassifier } from "../helpers/models";
import { fitsLikeModelFit } from "../helpers/fit-check";
import { freePort } from "../helpers/processes";

/**
 * Workers that join the driver (`meshtrain worker --join`), as a launcher on other hosts starts
 * them: real processes over real WebSockets on 127.0.0.1. Ranks come from the environment a
 * launcher sets, `--rank`, or arrival; training equals model.fit; every failure is a typed error
 * naming who; and no joined worker outlives its driver, whether it closes or dies.
 */

tf.enableProdMode();
const TOKEN = "join-test-token-0123456789abcdef";

/** A launch that waits for `n` joining workers on a free port; `outcome` settles it at once (for the failure tests). */
async function joinCluster(n: number, strategy: "data" | "pipeline", o: { timeoutMs?: number; elastic?: boolean } = {}) {
  const port = await freePort();
  const b = cluster().join({ workers: n, port, timeoutMs: o.timeoutMs ?? 60_000 }).token(TOKEN).backend("cpu");
  const launching = (strategy === "data" ? b.strategy("data", o.elastic ? { elastic: { minWorkers: 1 } } : {}) : b.strategy("pipeline", { microBatches: 2 })).launch();
  const outcome = launching.then(() => undefined, (e: unknown) => e);
  return { launching, outcome, url: `ws://127.0.0.1:${port}` };
}

describe("workers that join the driver", () => {
  test("ranks from Slurm's environment, --rank and arrival; data parallelism equals model.fit; all exit when the cluster closes", async () => {
    const { launching, url } = await joinCluster(3, "data");
    const slurm = startJoiner(url, { token: TOKEN, env: { SLURM_PROCID: "2", SLURM_NTASKS: "3" } });
    const flag = startJoiner(url, { token: TOKEN, args: ["--rank", "0"] });
    const any = startJoiner(url, { token: TOKEN });
    const c = await launching;
    try {
      assert.deepEqual(await Promise.all([flag, any, slurm].map((j) => j.joined())), [0, 1, 2]);
      assert.deepEqual(c.workers.map((w) => w.info.pid), [flag, any, slurm].map((j) => j.child.pid));
      await fitsLikeModelFit(c, { size: 144, seed: 144 });
    } finally {
      await c.close();
    }
    assert.deepEqual(await allExited([slurm, flag, any], 15_000), [0, 0, 0]);
  });

  test("workers whose ranks alternate between two machines (MESHTRAIN_MACHINE) form the ring machine by machine; data parallelism equals model.fit", async () => {
    const { launching, url } = await joinCluster(4, "data");
    const joiners = [0, 1, 2, 3].map((r) => startJoiner(url, { token: TOKEN, args: ["--rank", String(r)], env: { MESHTRAIN_MACHINE: r % 2 === 0 ? "machine-a" : "machine-b" } }));
    const c = await launching;
    try {
      assert.deepEqual(c.workers.map((w) => w.info.hostname), ["machine-a", "machine-b", "machine-a", "machine-b"]);
      const plan = c.plan(smallClassifier(6, 3), { batchSize: 16 });
      assert.ok(plan.strategy === "data");
      assert.deepEqual(plan.ring, [0, 2, 1, 3]);
      assert.match(plan.toString(), /ring 0 -> 2 -> 1 -> 3 -> 0[\s\S]*ring ordered by machine \(machine-a: 0, 2; machine-b: 1, 3\): 2 hops between machines instead of 4/);
      await fitsLikeModelFit(c, { size: 96, seed: 97 });
    } finally {
      await c.close();
    }
    assert.deepEqual(await allExited(joiners, 15_000), [0, 0, 0, 0]);
  });

  test("a pipeline over joined workers equals model.fit", async () => {
    const { launching, url } = await joinCluster(2, "pipeline");
    const joiners = [0, 1].map((r) => startJoiner(url, { token: TOKEN, env: { RANK: String(r), WORLD_SIZE: "2" } }));
    const c = await launching;
    try {
      await fitsLikeModelFit(c, { size: 96, seed: 96 });
    } finally {
      await c.close();
    }
    assert.deepEqual(await allExited(joiners, 15_000), [0, 0]);
  });

  test("add() in an elastic fit takes the next worker that joins", async () => {
    const { launching, url } = await joinCluster(2, "data", { elastic: true });
    const joiners: Joiner[] = [0, 1].map(() => startJoiner(url, { token: TOKEN }));
    const c = await launching;
    try {
      const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 14_400, seed: 7 });
      let adding: Promise<number> | undefined;
      const run = await c.fit(smallClassifier(6, 3), ds, {
        batchSize: 24,
        progress: false,
        onStep: (s) => {
          if (s.step !== 3) return;
          joiners.push(startJoiner(url, { token: TOKEN }));
          adding = c.add();
        },
      });
      assert.equal(await adding, 2);
      assert.ok(run.membership.some((m) => m.change === "joined" && m.rank === 2), JSON.stringify(run.membership));
    } finally {
      await c.close();
    }
    assert.deepEqual(await allExited(joiners, 15_000), [0, 0, 0]);
  });
});

describe("joins that fail say who and why", () => {
  test("too few workers: a TimeoutError naming who joined and which ranks are missing; the joined one exits", async () => {
    // Twelve seconds: a worker process takes several to start and load TF.js on a swamped machine.
    const { outcome, url } = await joinCluster(3, "data", { timeoutMs: 12_000 });
    const one = startJoiner(url, { token: TOKEN, args: ["--rank", "1"] });
    const err = await outcome;
    assert.ok(err instanceof TimeoutError, String(err));
    assert.match(err.message, /1 of 3 workers joined ws:\/\/127\.0\.0\.1:\d+ within 12000 ms; joined: rank 1 \(.*pid \d+.*\); missing: 2 worker\(s\), ranks 0, 2/);
    assert.notEqual((await allExited([one], 15_000))[0], 0);
    assert.match(one.output(), /could not join/);
  });

  test("a driver that never appears: the worker retries, then exits 3 with a TimeoutError naming the address it dialed and what to do", async () => {
    const port = await freePort();
    const lone = startJoiner(`ws://127.0.0.1:${port}`, { token: TOKEN, args: ["--join-timeout", "2"] });
    assert.deepEqual(await allExited([lone], 15_000), [3]);
    assert.match(lone.output(), /does not answer yet/);
    assert.match(lone.output(), new RegExp(`the driver at ws://127\\.0\\.0\\.1:${port} did not answer within 2 s \\(last: .*ECONNREFUSED.*\\)\nhelp: start the driver first.*\\[MT_ERR_TIMEOUT\\]`));
  });

  test("two workers claiming one rank: a LaunchError naming both", async () => {
    const { outcome, url } = await joinCluster(2, "data");
    const twins = [startJoiner(url, { token: TOKEN, args: ["--rank", "1"] }), startJoiner(url, { token: TOKEN, env: { OMPI_COMM_WORLD_RANK: "1", OMPI_COMM_WORLD_SIZE: "2" } })];
    const err = await outcome;
    assert.ok(err instanceof LaunchError, String(err));
    assert.match(err.message, /two workers claim rank 1: rank 1 \(.*\) and rank 1 \(.*\)/);
    for (const code of await allExited(twins, 15_000)) assert.notEqual(code, 0);
    assert.ok(twins.some((j) => /two workers claim rank 1/.test(j.output())), "a refused worker says why");
  });

  test("a rank or world size the cluster does not have: a LaunchError naming the worker and where its rank came from", async () => {
    const big = await joinCluster(2, "data");
    const third = startJoiner(big.url, { token: TOKEN, env: { RANK: "0", WORLD_SIZE: "3" } });
    const err = await big.outcome;
    assert.ok(err instanceof LaunchError, String(err));
    assert.match(err.message, /worker rank 0 \(.*\) was started as one of 3 \(torchrun \(RANK, WORLD_SIZE\)\), but the cluster waits for 2/);
    const far = await joinCluster(2, "data");
    const fifth = startJoiner(far.url, { token: TOKEN, args: ["--rank", "5"] });
    const err2 = await far.outcome;
    assert.ok(err2 instanceof LaunchError, String(err2));
    assert.match(err2.message, /claims rank 5 \(--rank\), but the cluster waits for ranks 0 to 1/);
    for (const code of await allExited([third, fifth], 15_000)) assert.notEqual(code, 0);
  });

  test("a wrong token: an AuthError on the driver, and the worker says it was refused", async () => {
    const { outcome, url } = await joinCluster(1, "data");
    const stranger = startJoiner(url, { token: "another-token-0123456789abcdef" });
    const err = await outcome;
    assert.ok(err instanceof AuthError, String(err));
    assert.match(err.message, /a worker at 127\.0\.0\.1:\d+ tried to join with another token/);
    assert.notEqual((await allExited([stranger], 15_000))[0], 0);
    assert.match(stranger.output(), /could not join .*refused/);
  });

  test("another meshtrain version: a LaunchError naming both versions, sent to the worker too", async () => {
    const { outcome, url } = await joinCluster(1, "data");
    const link = await dial(url, { maxFrameBytes: 65536, timeoutMs: 5000 });
    await offerHandshake(link, { token: TOKEN, timeoutMs: 5000, role: "joining", who: "the driver" });
    sendJoinFrame(link, { type: "hello", version: "0.0.9", url: "ws://127.0.0.1:9", pid: 1, hostname: "old-box", node: "v20.0.0", cpus: 1, memoryBytes: 1, claim: null });
    const reply = await readJoinFrame(link, { timeoutMs: 5000, who: "the driver", waitingFor: "its answer" });
    const err = await outcome;
    assert.ok(err instanceof LaunchError, String(err));
    assert.match(err.message, /worker \(old-box, pid 1, from .*\) runs meshtrain 0\.0\.9; this driver runs 0\.1\.0/);
    assert.equal(reply.type, "error");
    assert.match(reply.type === "error" ? reply.error.message : "", /runs meshtrain 0\.0\.9/);
    link.terminate();
  });

  test("a driver that dies (SIGKILL) takes its joined workers with it", async () => {
    const port = await freePort();
    const script = path.join(__dirname, "..", "helpers", "join-driver-script.js");
    const driver = spawn(process.execPath, [script, String(port)], { env: { ...process.env, MESHTRAIN_TOKEN: TOKEN }, stdio: ["ignore", "pipe", "inherit"] });
    const joiners = [0, 1].map(() => startJoiner(`ws://127.0.0.1:${port}`, { token: TOKEN }));
    await Promise.all(joiners.map((j) => j.joined()));
    await new Promise<void>((resolve) => driver.stdout.on("data", (d: Buffer) => void (/launched/.test(d.toString()) && resolve())));
    driver.kill("SIGKILL");
    // Whichever notices first (the session's link or the lifeline), both end: allExited throws naming any left.
    await allExited(joiners, 15_000);
  });
});
