import * as fs from "node:fs";
import * as tf from "@tensorflow/tfjs";
import { datasets, type StepRecord, type TrainingRun } from "../../sdk/index";
import { SCENARIOS, trialDir } from "./scenarios";

/**
 * One trial of the fault benchmark: scenario `index`'s cluster trains a small MLP for `steps`
 * steps; unless the step is "none", its `victim` (a worker rank, or -1 for the parameter server)
 * gets `signal` when step `at` is recorded. Prints what happened as one JSON line and writes the
 * final weights (float32, in the model's order) to `weightsOut` when the fit finished.
 *
 * usage: node fault-fit.js <scenario index> <trial> <steps> <at step | none> <victim> <weightsOut>
 */

export const BATCH = 96;

/** The same model in every trial: its first weights come from fixed seeds. */
export function faultModel(): tf.LayersModel {
  const kernelInitializer = (seed: number): ReturnType<typeof tf.initializers.glorotUniform> => tf.initializers.glorotUniform({ seed });
  return tf.sequential({
    layers: [
      tf.layers.dense({ units: 128, activation: "relu", inputShape: [64], kernelInitializer: kernelInitializer(1) }),
      tf.layers.dense({ units: 128, activation: "relu", kernelInitializer: kernelInitializer(2) }),
      tf.layers.dense({ units: 10, activation: "softmax", kernelInitializer: kernelInitializer(3) }),
    ],
  });
}

function rssMiB(pid: number): number | null {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb ? Number(kb) / 1024 : null;
  } catch {
    return null;
  }
}

const median = (v: number[]): number | null => (v.length ? [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]! : null);

async function main(): Promise<void> {
  const [indexArg, trialArg, stepsArg, atArg, victimArg, weightsOut] = process.argv.slice(2) as [string, string, string, string, string, string];
  const scenario = SCENARIOS[Number(indexArg)]!;
  const steps = Number(stepsArg);
  const at = atArg === "none" ? null : Number(atArg);
  const victim = Number(victimArg);
  tf.enableProdMode();
  const dir = trialDir(scenario.name, Number(trialArg));
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const c = await scenario.cluster(dir).launch();
  const spareRss = c.idleSpares.map((s) => rssMiB(s.info.pid)).find((x) => x !== null) ?? null;
  const pid = victim < 0 ? c.parameterServers[0]!.info.pid : c.workers[victim]!.info.pid;
  const seen: Array<{ step: number; t: number; rec: StepRecord }> = [];
  let fault: { t: number; fitMs: number } | null = null;
  const out: Record<string, unknown> = { scenario: scenario.name, signal: scenario.signal, victim: victim < 0 ? "server 0" : `rank ${victim}`, at, spareRssMiB: spareRss };
  let run: TrainingRun | undefined;
  const model = faultModel();
  try {
    const data = datasets.synthetic({ inputShape: [64], classes: 10, size: BATCH * steps, seed: 3 });
    run = await c.fit(model, data, {
      batchSize: BATCH,
      optimizer: { name: "adam", learningRate: 0.001 },
      seed: 5,
      loss: "categoricalCrossentropy",
      ...(scenario.fit?.(dir) ?? {}),
      onStep: (rec) => {
        const t = performance.now();
        seen.push({ step: rec.step, t, rec });
        if (at !== null && fault === null && rec.step === at) {
          fault = { t, fitMs: rec.endMs };
          process.kill(pid, scenario.signal);
        }
      },
    });
    out.survived = true;
  } catch (err) {
    out.survived = false;
    out.error = `${(err as Error).name}: ${(err as Error).message.split("\n")[0]}`;
    if (fault) out.errorAfterMs = performance.now() - (fault as { t: number }).t;
  } finally {
    if (scenario.signal === "SIGSTOP") {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Fenced already: the driver killed it.
      }
    }
  }
  const f = fault as { t: number; fitMs: number } | null;
  const after = f ? seen.filter((s) => s.t > f.t) : [];
  const before = f ? seen.filter((s) => s.t <= f.t) : seen;
  const lastBefore = Math.max(-1, ...before.map((s) => s.step));
  out.stepMsBefore = median(before.slice(2).map((s) => s.rec.ms));
  if (f && run) {
    const noticed = run.membership[0]?.atMs ?? run.departures[0]?.atMs;
    out.noticedMs = noticed !== undefined ? noticed - f.fitMs : null;
    // Steps in flight may still be recorded with the victim's part (sent before the fault): recovery ends with the first step run without it.
    // A stage's spare takes the victim's rank: then the first step recorded after the fault (replayed ones are not shown again).
    const rejoined = run.membership.some((m) => m.change === "joined" && m.rank === victim);
    const without = after.find((s) => victim < 0 || rejoined || s.rec.workers.every((w) => w.rank !== victim));
    out.recoveredMs = without ? without.t - f.t : null;
    // A spare or a new worker brings the fit back to its size: when the first step ran on as many workers as before.
    // Workers, not parts: under sync servers a survivor may compute a lost worker's part as well.
    const width = (s: (typeof seen)[number]): number => new Set(s.rec.workers.map((w) => w.rank)).size;
    const size = Math.max(0, ...before.map(width));
    const full = after.find((s) => s.t > (without?.t ?? Infinity) - 1 && width(s) >= size && (victim < 0 || rejoined || s.rec.workers.every((w) => w.rank !== victim)));
    out.fullSizeMs = full ? full.t - f.t : null;
    // Steps sent again: those recorded twice, or those after the step training went on from (in flight at the loss, or since a checkpoint).
    const from = run.membership[0]?.step;
    out.replayed = Math.max(after.filter((s) => s.step <= lastBefore).length, from !== undefined ? lastBefore + 1 - from : 0);
    out.stepMsAfter = median(after.slice(1).map((s) => s.rec.ms));
    out.membership = run.membership.map((m) => `${m.change} ${m.rank} at ${m.step}`);
  }
  if (run) {
    out.steps = run.history.length;
    const flat = model.getWeights().flatMap((w) => [...(w.dataSync() as Float32Array)]);
    fs.writeFileSync(weightsOut, Buffer.from(new Float32Array(flat).buffer));
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
  await c.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
