import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import * as tf from "@tensorflow/tfjs";
import { cluster } from "../../sdk/cluster/builder";
import { TrainingRun } from "../../sdk/cluster/training-run";
import { cost } from "../../sdk/metrics/cost";
import { stragglers } from "../../sdk/metrics/stragglers";
import { activationElementsPerSample, estimateReplicaMemory, RUNTIME_GROWTH_BYTES } from "../../sdk/plan/memory";
import { summarizeModel } from "../../sdk/plan/model-summary";
import { makeSchedule } from "../../sdk/plan/schedules";
import { measuredScheduleFigure, scheduleFigure } from "../../sdk/viz/schedule-timeline";
import { breakdownFigure } from "../../sdk/viz/breakdown";
import { DISPLAY, NOTEBOOK_HOOK, type MimeBundle } from "../../sdk/viz/displayable";
import { scalingFigure } from "../../sdk/viz/scaling";
import { figureToSvg, niceTicks } from "../../sdk/viz/svg-chart";
import { throughputFigure } from "../../sdk/viz/throughput-figure";
import { timelineFigure, timelineSpans } from "../../sdk/viz/timeline";
import { chromeTrace } from "../../sdk/viz/trace";
import type { StepRecord, WorkerStepRecord } from "../../sdk/metrics/records";

/** Three steps on two ranks; rank 1 computes longer, so it is the straggler and rank 0 waits. */
function history(): StepRecord[] {
  return [0, 1, 2].map((step) => ({
    step,
    epoch: 0,
    loss: 1 / (step + 1),
    samples: 64,
    ms: 20,
    endMs: 20 * (step + 1),
    straggler: 1,
    workers: [
      { rank: 0, computeMs: 12, commMs: 2, waitMs: 5, applyMs: 1, startMs: 20 * step },
      { rank: 1, computeMs: 17, commMs: 2, waitMs: 0, applyMs: 1, startMs: 20 * step },
    ],
  }));
}

function mlp(): tf.LayersModel {
  return tf.sequential({ layers: [tf.layers.dense({ units: 8, inputShape: [4], activation: "relu" }), tf.layers.dense({ units: 3 })] });
}

test("throughput, breakdown and timeline figures hold the numbers of the records", () => {
  const h = history();
  const t = throughputFigure(h);
  assert.deepEqual(t.data[0]!.y, [3200, 3200, 3200]);
  const b = breakdownFigure(h);
  assert.deepEqual(b.data.map((d) => d.name), ["compute", "communication", "waiting"]);
  assert.deepEqual(b.data[0]!.y, [12, 17]);
  assert.deepEqual(b.data[2]!.y, [5, 0]);
  const spans = timelineSpans(h);
  const r0 = spans.filter((s) => s.rank === 0 && s.step === 1);
  assert.deepEqual(r0.map((s) => [s.phase, s.startMs, s.durationMs]), [["compute", 20, 11], ["waiting", 31, 5], ["communication", 36, 2], ["update", 38, 1]]);
  const tl = timelineFigure(h, { from: 0, to: 2 });
  assert.equal(tl.data.length, 4);
  assert.equal(tl.data[0]!.orientation, "h");
  // A worker lost within the steps shown is a line at the time the driver learned of it; one after them is not drawn.
  const marked = timelineFigure(h, { from: 0, to: 2 }, [{ atMs: 30, label: "rank 1 left (1 training)" }, { atMs: 10_000, label: "rank 2 joined (2 training)" }]);
  assert.deepEqual(marked.data.slice(4).map((d) => [d.name, d.x]), [["rank 1 left (1 training)", [30, 30]]]);
  const instant = chromeTrace(h, [{ atMs: 30, label: "rank 1 left (1 training)" }]).traceEvents.filter((e) => e.ph === "i");
  assert.deepEqual(instant.map((e) => [e.name, e.ts, e.s]), [["rank 1 left (1 training)", 30_000, "g"]]);
});

test("a ZeRO step's timeline shows each layer's all-gather and reduce-scatter where it ran, the computation between them", () => {
  const [first] = history();
  const collectives = [
    { kind: "all-gather" as const, layer: 0, start: 0, end: 1 },
    { kind: "all-gather" as const, layer: 1, start: 3, end: 4 },
    { kind: "reduce-scatter" as const, layer: 1, start: 9, end: 11 },
    { kind: "reduce-scatter" as const, layer: 0, start: 12, end: 13 },
  ];
  const h = [{ ...first!, workers: [{ rank: 0, computeMs: 12, commMs: 4, waitMs: 1, applyMs: 1, startMs: 100, collectives }] }];
  const spans = timelineSpans(h).map((s) => [s.phase, s.layer ?? null, s.startMs, s.durationMs]);
  assert.deepEqual(spans, [
    ["all-gather", 0, 100, 1], ["compute", null, 101, 2], ["all-gather", 1, 103, 1], ["compute", null, 104, 5],
    ["reduce-scatter", 1, 109, 2], ["compute", null, 111, 1], ["reduce-scatter", 0, 112, 1], ["update", null, 113, 4],
  ]);
  const fig = timelineFigure(h);
  assert.deepEqual(fig.data.map((d) => d.name), ["compute", "waiting", "communication", "update", "all-gather", "reduce-scatter"]);
  assert.deepEqual(fig.data[5]!.text, ["layer 1", "layer 0"]);
  assert.deepEqual(chromeTrace(h).traceEvents.filter((e) => e.name === "reduce-scatter").map((e) => e.args?.layer), [1, 0]);
});

test("every figure draws as a static SVG with its shapes and labels", () => {
  const h = history();
  for (const fig of [throughputFigure(h), breakdownFigure(h), timelineFigure(h), scalingFigure({ meshtrain: [{ workers: 1, samplesPerSecond: 100 }, { workers: 2, samplesPerSecond: 180 }] })]) {
    const svg = figureToSvg(fig);
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.ok((svg.match(/<(rect|polyline|circle)/g) ?? []).length > 5, fig.layout.title?.text);
    assert.ok(svg.includes(fig.layout.title!.text.replace(/&/g, "&amp;")), "title drawn");
  }
  assert.deepEqual(niceTicks(0, 10), [0, 2, 4, 6, 8, 10]);
});

test("the placement diagram has a box per worker, its layers, memory bars and the ring", () => {
  const plan = cluster().workers(3).plan(mlp(), { batchSize: 96, optimizer: "adam" });
  const svg = plan.draw();
  assert.equal((svg.match(/>rank \d</g) ?? []).length, 3);
  assert.equal((svg.match(/marker-end="url\(#arrow\)"/g) ?? []).length, 3, "ring arrows 0->1->2->0");
  assert.match(svg, /batch slice: 32 samples/);
  assert.match(svg, /Dense 8/);
  assert.match(String(plan), /memory per replica \(estimate\): parameters 0\.2 KiB|memory per replica \(estimate\): parameters \d+ B/);
});

test("memory estimate counts parameters, gradients, optimizer slots and activations", () => {
  const m = summarizeModel(mlp());
  // The relu layer keeps its product, biased sum and activation; the linear one its output.
  assert.equal(activationElementsPerSample(m), 3 * 8 + 3);
  const e = estimateReplicaMemory(m, { batchSize: 10, optimizer: { name: "adam", learningRate: 0.001, beta1: 0.9, beta2: 0.999 } });
  assert.deepEqual(e, { paramsBytes: 67 * 4, gradientBytes: 67 * 4, optimizerBytes: 67 * 4 * 2, activationBytes: 27 * 4 * 10, runtimeGrowthBytes: RUNTIME_GROWTH_BYTES });
  assert.equal(estimateReplicaMemory(m, {}).activationBytes, null);
});

test("stragglers, cost and the Chrome trace", () => {
  const s = stragglers(history());
  assert.deepEqual(s.stepsLast, { 1: 3 });
  assert.deepEqual(s.worst, { rank: 1, steps: 3, of: 3 });
  assert.equal(s.medianLeadMs, 5);
  const c = cost(7200, 3600, 0.5);
  assert.equal(c.dollars, 0.5);
  assert.equal(c.samplesPerDollar, 14400);
  assert.throws(() => cost(1, 1, 0), /pricePerHour 0 must be a positive number/);
  const trace = chromeTrace(history());
  const events = trace.traceEvents.filter((e) => e.ph === "X");
  assert.equal(events.length, 3 * (4 + 3), "rank 1 never waits: no waiting span");
  assert.ok(events.every((e) => Number.isInteger(e.ts) && e.dur! >= 1));
  assert.deepEqual(trace.traceEvents.filter((e) => e.ph === "M").map((e) => e.args?.name), ["rank 0", "rank 1"]);
});

test("a run prints as text, draws through the notebook hook, and writes a standalone report", () => {
  const plan = cluster().workers(2).plan(mlp(), { batchSize: 64 });
  const info = { pid: 1, hostname: "h", version: "v", node: "v20", backend: "native", device: "cpu", memoryBytes: 2 ** 30, cpus: 2, gflops: 50, kernelOverheadUs: 8, notes: [] };
  const run = new TrainingRun({ history: history(), plan, workers: [0, 1].map((rank) => ({ rank, address: "ws://x", local: true, info })), seed: 1, epochs: 1, wallMs: 100 });
  const inspect = Symbol.for("nodejs.util.inspect.custom");
  const asText = (run as unknown as Record<symbol, () => string>)[inspect]!();
  assert.match(asText, /3 steps over 1 epoch/);
  assert.match(asText, /rank 1 finished computing last in 3 of 3 steps/);
  const shown: MimeBundle[] = [];
  (globalThis as Record<symbol, unknown>)[NOTEBOOK_HOOK] = { display: (b: MimeBundle) => shown.push(b) };
  try {
    assert.equal((run as unknown as Record<symbol, () => string>)[inspect]!(), "");
    assert.equal(shown.length, 3);
    assert.ok("application/vnd.plotly.v1+json" in shown[1]! && "text/html" in shown[1]!);
    assert.equal((run.throughput() as unknown as Record<symbol, () => MimeBundle[]>)[DISPLAY]!().length, 1);
  } finally {
    delete (globalThis as Record<symbol, unknown>)[NOTEBOOK_HOOK];
  }
  assert.deepEqual(JSON.parse(JSON.stringify(run.throughput())).layout.title, { text: "Throughput per step" });
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-")), "run.html");
  run.report(file);
  const html = fs.readFileSync(file, "utf8");
  assert.equal((html.match(/Plotly\.newPlot\(el/g) ?? []).length, 1, "one render loop");
  assert.equal((html.match(/id="figure-\d+-data"/g) ?? []).length, 3);
  assert.ok(html.length > 3_000_000, "plotly.js is inlined");
  assert.equal(html.split("plotly.js v").length - 1 >= 1, true);
});

test("pipeline plans draw their stages, links and rings; schedules draw as timelines, planned and measured", () => {
  const model = tf.sequential({
    layers: [tf.layers.dense({ units: 16, inputShape: [8], activation: "relu" }), tf.layers.dense({ units: 16 }), tf.layers.dense({ units: 4, activation: "softmax" })],
  });
  const plan = cluster().workers(4).strategy("hybrid", { stages: 2, microBatches: 4, schedule: "gpipe" }).plan(model, { batchSize: 16 });
  const svg = plan.draw();
  assert.match(svg, /Hybrid parallelism: 2 replica\(s\) x 2 stage\(s\), 4 micro-batch\(es\), GPIPE/);
  for (const rank of [0, 1, 2, 3]) assert.match(svg, new RegExp(`rank ${rank}<`));
  assert.equal((svg.match(/all-reduce</g) ?? []).length, 2, "one all-reduce link per stage");
  assert.equal((svg.match(/marker-end="url\(#act\)"/g) ?? []).length, 2, "one activation arrow per replica");
  assert.match(svg, /act\. 128 B/, "16 floats of a 2-sample micro-batch");
  const planned = scheduleFigure(makeSchedule("1f1b", 2, 3));
  assert.deepEqual(planned.data.map((t) => t.name), ["forward", "backward (recomputes the forward)"]);
  assert.deepEqual((planned.data[0]!.text ?? []).slice(0, 3), ["F0", "F1", "F2"]);
  assert.match(figureToSvg(planned), />B0</);
  const record = (rank: number, stage: number, startMs: number, acts: Array<[string, number, number]>): WorkerStepRecord => ({
    rank, stage, replica: 0, computeMs: 1, commMs: 0, waitMs: 0, applyMs: 0, startMs,
    actions: acts.map(([k, s, e], i) => ({ kind: k as "F" | "B", micro: i % 2, start: s, end: e })),
    inFlightMax: 1,
  });
  const measured = measuredScheduleFigure([{ step: 0, epoch: 0, loss: 1, samples: 4, ms: 10, endMs: 10, straggler: 1, bubble: 0.4, workers: [record(0, 0, 100, [["F", 0, 1], ["B", 5, 7]]), record(1, 1, 101, [["F", 0, 1], ["B", 1, 3]])] }]);
  assert.match(measured.layout.title!.text, /Step 0 as measured, bubble 40%/);
  assert.deepEqual(measured.data[0]!.base, [0, 1], "times are shifted to the step's first action");
});

test("static drawings: a long title is wrapped within the drawing, and a late timeline window starts its axis there", () => {
  const long = "done: 375/375 steps on 2 worker(s), 4919 samples/s over the run after 3 warm-up step(s), loss 0.1134";
  const svg = figureToSvg(throughputFigure(history(), long));
  const width = Number(/width="(\d+)"/.exec(svg)![1]);
  const lines = [...svg.matchAll(/<tspan [^>]*>([^<]*)<\/tspan>/g)].map((m) => m[1]!);
  assert.equal(lines.join(" "), long);
  assert.ok(lines.length === 2, `wrapped into ${lines.length} line(s)`);
  // About 7.8 px a bold 14 px character: each line within the drawing.
  for (const l of lines) assert.ok(l.length * 7.8 <= width - 16, `"${l}" is wider than the drawing`);
  // Steps 50-53 of a long run: the axis starts near the window, not at 0.
  const late = Array.from({ length: 60 }, (_, step) => ({ ...history()[0]!, step, endMs: 20 * (step + 1), workers: history()[0]!.workers.map((w) => ({ ...w, startMs: 20 * step })) }));
  const window = figureToSvg(timelineFigure(late, { from: 50, to: 54 }));
  const ticks = [...window.matchAll(/<text [^>]*text-anchor="middle"[^>]*>([\d.]+)<\/text>/g)].map((m) => Number(m[1]));
  assert.ok(ticks.length > 0 && Math.min(...ticks) >= 900, `ticks ${ticks.join(", ")}`);
});
