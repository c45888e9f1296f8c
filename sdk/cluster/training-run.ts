import { membershipMarks } from "../viz/membership-marks";
import * as fs from "node:fs";
import type { WorkerSnapshot } from "../config/worker-snapshot";
import { dataPlaneLine } from "../driver/data-plane-choice";
import { replicaStepLine, slowStepLine } from "../metrics/replica-step";
import { cost, type CostReport } from "../metrics/cost";
import { epochHistory } from "../metrics/epochs";
import type {
  Departure,
  EpochHistory,
  LogLine,
  MemberMemory,
  MembershipChange,
  OverlapTrialRecord,
  PushRecord,
  RunRecord,
  StepRecord,
  TrainingSetup,
} from "../metrics/records";
import { describeEnd } from "../metrics/records";
import { memoryLines } from "../metrics/memory-lines";
import { summarize, type RunSummary } from "../metrics/summary";
import type { Plan } from "../plan/plans";
import { strategyOf } from "../strategies/strategy-table";
import type { RunNotes } from "../strategies/strategy";
import { breakdownFigure } from "../viz/breakdown";
import { memoryFigure } from "../viz/memory-figure";
import { figureBundle, planBundle, shown } from "../viz/bundles";
import { makeDisplayable, type MimeBundle } from "../viz/displayable";
import { esc, htmlRow } from "../viz/escape";
import type { Figure } from "../viz/figure";
import { lossFigure, stalenessFigure } from "../viz/ps-figures";
import { plotlyPath, reportHtml } from "../viz/report";
import { measuredScheduleFigure } from "../viz/schedule-timeline";
import { throughputFigure } from "../viz/throughput-figure";
import { timelineFigure } from "../viz/timeline";
import { chromeTrace } from "../viz/trace";
import type { DataPlaneChoice } from "../protocol/data-plane";
import type { ReplicaStepChoice } from "../protocol/profile-messages";
import { labelOf } from "../members/worker-handle";

/**
 * The record of one fit (every step, the plan it ran, the workers it ran on) with the measures
 * and pictures made from it. In a notebook it draws itself: summary, throughput, breakdown.
 */
export class TrainingRun {
  readonly history: readonly StepRecord[];
  readonly plan: Plan;
  readonly workers: readonly WorkerSnapshot[];
  /** Seed of the shuffles (given, or the one chosen): fit again with it to repeat the run. */
  readonly seed: number;
  readonly epochs: number;
  readonly wallMs: number;
  /** Strategy "ps": every push with the version it was computed on and its staleness (empty otherwise). */
  readonly pushes: readonly PushRecord[];
  /** Strategy "ps", async: workers that left while the others carried on (empty otherwise). */
  readonly departures: readonly Departure[];
  /** Strategy "ps": each server's version at the end, i.e. the updates it applied. */
  readonly serverVersions: readonly number[];
  /** Elastic data parallelism: every worker that left or joined, and when (empty otherwise). */
  readonly membership: readonly MembershipChange[];
  /**
   * Per epoch, as TF.js model.fit's History: `byEpoch.history.loss[e]` and each compiled metric
   * (`acc` for "accuracy"), the mean over the epoch's samples.
   */
  readonly byEpoch: EpochHistory;
  /** The optimizer, loss and metrics trained with, and where each came from. */
  readonly training: TrainingSetup | undefined;
  /** Where the all-reduces travelled ("native" data plane or "websocket" links) and why; undefined without any. */
  readonly dataPlane: DataPlaneChoice | undefined;
  /** How the replicas computed their gradients: the native step, or autodiff and why. */
  readonly replicaStep: ReplicaStepChoice | undefined;
  /** Data parallelism, overlap "auto" with no core to spare: both ways timed on the fit's first steps, and the one kept. */
  readonly overlapTrial: OverlapTrialRecord | undefined;
  /**
   * What the workers printed during the fit, every line whatever the cluster's workerOutput
   * level (the driver keeps its last 10,000 lines; a run's share is copied at its end).
   */
  readonly logs: readonly LogLine[];
  /** What each worker and server measured of its memory during the fit: peak resident set, and TF.js's tensors at the end. */
  readonly memory: readonly MemberMemory[];
  private readonly record: RunRecord;

  /** A run from its record (Cluster.fit makes it). */
  constructor(record: RunRecord) {
    this.record = record;
    this.history = record.history;
    this.plan = record.plan;
    this.workers = record.workers;
    this.seed = record.seed;
    this.epochs = record.epochs;
    this.wallMs = record.wallMs;
    this.pushes = record.ps?.pushes ?? [];
    this.departures = record.ps?.departures ?? [];
    this.serverVersions = record.ps?.serverVersions ?? [];
    this.membership = record.membership ?? [];
    this.byEpoch = epochHistory(record.history, record.validation);
    this.training = record.training;
    this.dataPlane = record.dataPlane;
    this.replicaStep = record.replicaStep;
    this.overlapTrial = record.overlapTrial;
    this.logs = record.logs ?? [];
    this.memory = record.memory ?? [];
    Object.defineProperty(this, "record", { enumerable: false });
    makeDisplayable(
      this,
      () => this.bundles(),
      () => this.toString(),
    );
  }

  /** Medians and totals of the steps after warm-up: throughput, step time per rank, stragglers, speed-up. */
  summary(): RunSummary {
    return summarize(this.record);
  }

  /** What the run's strategy says about it: a label, who held it back, its own figures. */
  private strategyNotes(s: RunSummary = this.summary()): RunNotes {
    return strategyOf(this.plan).describe(this.record, s);
  }

  /**
   * The run's notes, as its summary prints them: what it trained with (optimizer, loss and
   * where each came from), each epoch's loss, which replica step and data plane ran and why,
   * skipped steps, what the strategy says held the run back, and workers that left or joined.
   */
  get notes(): string[] {
    return this.noteLines(this.summary());
  }

  private noteLines(s: RunSummary): string[] {
    return [
      ...this.setupLines(),
      ...this.strategyNotes(s).lines,
      ...this.membershipLines(),
      ...memoryLines(this.plan, this.memory),
    ];
  }

  /** Samples per second of every step (a Plotly figure; draws itself in a notebook). */
  throughput(): Figure {
    return shown(throughputFigure(this.history, undefined, membershipMarks(this.membership)));
  }

  /** Each worker's memory: the plan's estimate beside the peak it measured during the fit (a Plotly figure). */
  memoryFigure(): Figure {
    return shown(memoryFigure(this.plan, this.memory));
  }

  /** Median compute, communication and waiting per step on each rank, stacked. */
  breakdown(): Figure {
    return shown(breakdownFigure(this.history));
  }

  /** When each rank computed, waited and communicated, for steps [from, to) (8 steps by default). */
  timeline(options: { from?: number; to?: number } = {}): Figure {
    return shown(timelineFigure(this.history, options, membershipMarks(this.membership)));
  }

  /**
   * Pipeline strategies: one step's forwards and backwards on every worker, as measured (the
   * middle step by default). Gaps are the bubble.
   */
  schedule(options: { step?: number } = {}): Figure {
    return shown(measuredScheduleFigure(this.history, options.step));
  }

  /** Strategy "ps": how many pushes had each staleness (updates missed between pull and push). */
  staleness(): Figure {
    return shown(stalenessFigure([{ name: this.label(), pushes: this.pushes }]));
  }

  /** The loss of every step (round), against wall time since the fit started; departures marked. */
  loss(): Figure {
    return shown(lossFigure([{ name: this.label(), history: this.history, departures: this.departures }]));
  }

  /** A short name for legends: strategy and mode. */
  label(): string {
    return this.strategyNotes().label;
  }

  /** Writes the timeline as Chrome trace-event JSON, which Perfetto and chrome://tracing open. */
  saveTrace(path: string): void {
    fs.writeFileSync(path, JSON.stringify(chromeTrace(this.history, membershipMarks(this.membership))));
  }

  /** Samples per dollar, given the hourly price of everything the run used. */
  cost(options: { pricePerHour: number }): CostReport {
    return cost(this.summary().samples, this.wallMs / 1000, options.pricePerHour);
  }

  /** Writes one standalone HTML page (plotly.js inlined once): placement, summary, figures. */
  report(path: string): void {
    const html = reportHtml(
      `meshtrain run: ${this.plan.worldSize} worker(s), ${this.history.length} steps`,
      [
        { title: "Placement", html: this.plan.draw() },
        { title: "Summary", html: this.summaryHtml() },
        { title: "Throughput", figure: throughputFigure(this.history) },
        { title: "Step time per rank", figure: breakdownFigure(this.history) },
        { title: "Timeline", figure: timelineFigure(this.history) },
        ...this.strategyNotes().figures(),
      ],
      fs.readFileSync(plotlyPath(), "utf8"),
    );
    fs.writeFileSync(path, html);
  }

  /** The summary as an HTML table: what a notebook shows when a run is a cell's value. */
  summaryHtml(): string {
    return this.html(this.summary());
  }

  private html(s: RunSummary): string {
    const rows = s.workers
      .map(
        (w) =>
          `<tr><td>${w.rank}</td><td>${w.backend}</td><td>${w.device}</td><td>${w.computeMs.toFixed(1)}</td><td>${w.commMs.toFixed(1)}</td><td>${w.waitMs.toFixed(1)}</td><td>${s.stragglers.stepsLast[w.rank] ?? 0}</td></tr>`,
      )
      .join("");
    const paragraphs = this.noteLines(s)
      .map((l) => `<p>${esc(l)}</p>`)
      .join("");
    return (
      `<p><b>${s.steps} steps</b> over ${esc(this.extent(s))}. ` +
      `Throughput <b>${s.samplesPerSecond.toFixed(0)} samples/s</b> after ${s.warmupSteps} warm-up steps; median step ${s.medianStepMs.toFixed(1)} ms; loss ${s.firstLoss.toFixed(4)} &#8594; ${s.finalLoss.toFixed(4)}.</p>` +
      `<table><tr><th>rank</th><th>backend</th><th>device</th><th>compute ms</th><th>comm ms</th><th>wait ms</th><th>steps last</th></tr>${rows}</table>` +
      paragraphs +
      this.predictedHtml(s)
    );
  }

  /** "7 of 10 epoch(s), 28000 samples in 9.1 s on 2 worker(s); ended by a callback (model.stopTraining)": how far it went, and what ended it short. */
  private extent(s: RunSummary): string {
    const first = this.history[0]?.epoch ?? 0;
    const ran = this.history.length > 0 ? this.history[this.history.length - 1]!.epoch - first + 1 : 0;
    const epochs = ran < s.epochs - first ? `${ran} of ${s.epochs - first}` : `${s.epochs - first}`;
    const end = this.record.ended && this.record.ended.by !== "done" ? `; ${describeEnd(this.record.ended)}` : "";
    return `${epochs} epoch(s), ${s.samples} samples in ${(s.wallMs / 1000).toFixed(1)} s on ${this.workers.length} worker(s)${end}`;
  }

  /** What it trained with and from where; each epoch's loss and metrics; steps skipped. */
  private setupLines(): string[] {
    const t = this.training;
    const lines: string[] = [];
    if (t) {
      const { name, ...settings } = t.optimizer;
      const opt = `${name} (${Object.entries(settings)
        .map(([k, v]) => `${k} ${String(v)}`)
        .join(", ")})`;
      lines.push(
        `optimizer ${opt} from ${t.origins.optimizer}; loss ${t.loss} from ${t.origins.loss}${t.metrics.length ? `; metrics ${t.metrics.join(", ")}` : ""}`,
      );
    }
    const h = this.byEpoch;
    if (Object.keys(h.history).length > 1) {
      h.epoch.forEach((e, i) =>
        lines.push(
          `epoch ${e + 1}: ${Object.entries(h.history)
            .map(([k, v]) => `${k} ${v[i]!.toFixed(4)}`)
            .join(", ")}`,
        ),
      );
    }
    if (this.replicaStep) lines.push(replicaStepLine(this.replicaStep));
    const slow = this.history.flatMap((r) =>
      r.workers.flatMap((w) => (w.slow ? [{ rank: w.rank, ...w.slow }] : [])),
    )[0];
    if (slow) lines.push(slowStepLine(slow));
    if (this.dataPlane) lines.push(dataPlaneLine(this.dataPlane));
    if (this.record.checkpoints) lines.push(checkpointsLine(this.record.checkpoints));
    const skipped = this.history.filter((r) => r.skipped).map((r) => r.step);
    if (skipped.length)
      lines.push(
        `${skipped.length} step(s) skipped for NaN or Infinity (nonFinite "skip"): ${skipped.slice(0, 10).join(", ")}${skipped.length > 10 ? ", ..." : ""}`,
      );
    return lines;
  }

  private membershipLines(): string[] {
    return this.membership.map(
      (m) =>
        `${labelOf(m.server ? "ps" : "worker", m.rank)} (${m.address}) ${m.change} at ${(m.atMs / 1000).toFixed(1)} s; training went on from step ${m.step} with ${m.workers} worker(s)${m.cause ? `: ${m.cause}` : ""}`,
    );
  }

  private predictedHtml(s: RunSummary): string {
    if (!s.predicted && s.bubble === null) return "";
    const row = (what: string, p: string, m: string): string => htmlRow([what, p, m]);
    const pct = (v: number | null | undefined): string =>
      v === null || v === undefined ? "-" : `${(v * 100).toFixed(0)}%`;
    return (
      `<table><tr><th></th><th>predicted</th><th>measured</th></tr>` +
      row("samples/s", s.predicted ? s.predicted.samplesPerSecond.toFixed(0) : "-", s.samplesPerSecond.toFixed(0)) +
      row("step ms", s.predicted ? s.predicted.stepMs.toFixed(1) : "-", s.medianStepMs.toFixed(1)) +
      (s.bubble !== null ? row("bubble", pct(s.predicted?.bubble), pct(s.bubble)) : "") +
      `</table>`
    );
  }

  private bundles(): MimeBundle[] {
    const s = this.summary();
    const figures = [
      throughputFigure(this.history, undefined, membershipMarks(this.membership)),
      breakdownFigure(this.history),
      ...this.strategyNotes(s)
        .figures()
        .map((f) => f.figure),
    ];
    return [{ "text/html": this.html(s), "text/plain": this.text(s) }, ...figures.map(figureBundle)];
  }

  /** The placement diagram of the plan this run used. */
  placement(): MimeBundle {
    return planBundle(this.plan);
  }

  /** The run in words: strategy, samples/s, step time split per rank, what held it back. */
  toString(): string {
    return this.text(this.summary());
  }

  private text(s: RunSummary): string {
    const lines = [
      `${s.steps} steps over ${this.extent(s)}`,
      `throughput ${s.samplesPerSecond.toFixed(0)} samples/s (after ${s.warmupSteps} warm-up steps), median step ${s.medianStepMs.toFixed(1)} ms`,
      `loss ${s.firstLoss.toFixed(4)} -> ${s.finalLoss.toFixed(4)}`,
      "rank  backend  device  compute ms  comm ms  wait ms  (medians per step)",
      ...s.workers.map(
        (w) =>
          `${String(w.rank).padEnd(6)}${w.backend.padEnd(9)}${w.device.padEnd(8)}${w.computeMs.toFixed(1).padStart(10)}${w.commMs.toFixed(1).padStart(9)}${w.waitMs.toFixed(1).padStart(9)}`,
      ),
      ...this.noteLines(s),
    ];
    if (s.bubble !== null) lines.push(`bubble (measured, median per step): ${(s.bubble * 100).toFixed(0)}%`);
    if (s.predicted) {
      lines.push(
        `predicted ${s.predicted.samplesPerSecond.toFixed(0)} samples/s and ${s.predicted.stepMs.toFixed(1)} ms per step; measured ${s.samplesPerSecond.toFixed(0)} samples/s and ${s.medianStepMs.toFixed(1)} ms`,
      );
    }
    return lines.join("\n");
  }
}

function checkpointsLine(c: { every: number; saveMs: number; stepMs: number }): string {
  return `checkpoints every ${c.every} step(s), chosen (every "auto"): the first took ${c.saveMs.toFixed(0)} ms against ${c.stepMs.toFixed(1)} ms a step, so writing them takes at most 5% of the fit; a loss costs up to ${c.every} step(s) run again`;
}
