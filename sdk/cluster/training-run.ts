import * as fs from "node:fs";
import type { StepRecord } from "../config/fit-options";
import type { WorkerSnapshot } from "../config/worker-snapshot";
import type { Plan } from "../strategies/registry";
import { measuredScheduleFigure } from "../viz/schedule-timeline";
import { breakdownFigure } from "../viz/breakdown";
import { figureBundle, planBundle } from "../viz/bundles";
import { displayableFigure, makeDisplayable, type MimeBundle } from "../viz/displayable";
import type { Figure } from "../viz/figure";
import { placementSvg } from "../viz/placement";
import { plotlyPath, reportHtml } from "../viz/report";
import { throughputFigure } from "../viz/throughput";
import { timelineFigure } from "../viz/timeline";
import { chromeTrace } from "../viz/trace";
import { cost, type CostReport } from "../metrics/cost";
import { stragglers, type StragglerSummary } from "../metrics/stragglers";
import { defaultWarmup, median, throughput } from "../metrics/throughput";
import type { Departure, PsRunRecord, PushRecord } from "../strategies/ps/records";
import type { MembershipChange } from "../strategies/data/elastic-runtime";
import { lossFigure, stalenessFigure } from "../viz/ps-figures";

export interface WorkerSummary {
  rank: number;
  backend: string;
  device: string;
  /** Medians over the steps after warm-up, in ms. */
  computeMs: number;
  commMs: number;
  waitMs: number;
}

export interface RunSummary {
  steps: number;
  epochs: number;
  samples: number;
  /** Wall time of the whole fit at the driver, including loading the model on the workers. */
  wallMs: number;
  warmupSteps: number;
  /** Samples per second over the steps after warm-up. */
  samplesPerSecond: number;
  medianStepMs: number;
  firstLoss: number;
  finalLoss: number;
  workers: WorkerSummary[];
  stragglers: StragglerSummary;
  /** Pipeline strategies: the median measured share of stage time spent idle per step. */
  bubble: number | null;
  /** What the plan predicted, when the workers' speeds were measured, beside what was measured. */
  predicted: { samplesPerSecond: number; stepMs: number; bubble: number } | null;
}

function shown(fig: Figure): Figure {
  return displayableFigure(fig, figureBundle);
}

/** What a strategy's runtime returns for one fit: plain data. */
export interface RunRecord {
  history: readonly StepRecord[];
  plan: Plan;
  workers: readonly WorkerSnapshot[];
  seed: number;
  epochs: number;
  wallMs: number;
  /** Strategy "ps": every push, every departure, the servers' versions. */
  ps?: PsRunRecord;
  /** Elastic data parallelism: every worker that left or joined. */
  membership?: MembershipChange[];
}

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

  constructor(record: RunRecord) {
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
    makeDisplayable(this, () => this.bundles(), () => this.toString());
  }

  summary(): RunSummary {
    const h = this.history;
    const warm = defaultWarmup(h.length);
    const window = h.slice(warm);
    return {
      steps: h.length,
      epochs: this.epochs,
      samples: h.reduce((a, s) => a + s.samples, 0),
      wallMs: this.wallMs,
      warmupSteps: warm,
      samplesPerSecond: throughput(h, warm),
      medianStepMs: median(window.map((s) => s.ms)),
      firstLoss: h[0]?.loss ?? NaN,
      finalLoss: h[h.length - 1]?.loss ?? NaN,
      workers: this.workers.map((w) => {
        const per = window.flatMap((s) => s.workers.filter((x) => x.rank === w.rank));
        return {
          rank: w.rank,
          backend: w.info.backend,
          device: w.info.device,
          computeMs: median(per.map((p) => p.computeMs)),
          commMs: median(per.map((p) => p.commMs)),
          waitMs: median(per.map((p) => p.waitMs)),
        };
      }),
      stragglers: stragglers(window.length > 0 ? window : h),
      bubble: window.some((s) => s.bubble !== undefined) ? median(window.map((s) => s.bubble ?? 0)) : null,
      predicted: this.plan.prediction
        ? { samplesPerSecond: this.plan.prediction.samplesPerSecond, stepMs: this.plan.prediction.stepMs, bubble: this.plan.prediction.bubble }
        : null,
    };
  }

  /** Samples per second of every step (a Plotly figure; draws itself in a notebook). */
  throughput(): Figure {
    return shown(throughputFigure(this.history, undefined, this.marks()));
  }

  /** Membership changes as marks for per-step plots. */
  private marks(): Array<{ step: number; label: string }> {
    return this.membership.map((m) => ({ step: m.step, label: `rank ${m.rank} ${m.change} (${m.workers} training)` }));
  }

  /** Median compute, communication and waiting per step on each rank, stacked. */
  breakdown(): Figure {
    return shown(breakdownFigure(this.history));
  }

  /** When each rank computed, waited and communicated, for steps [from, to) (8 steps by default). */
  timeline(options: { from?: number; to?: number } = {}): Figure {
    return shown(timelineFigure(this.history, options));
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
    const p = this.plan;
    if (p.strategy !== "ps") return `${p.strategy}, ${this.workers.length} worker(s)`;
    return `ps ${p.mode}${p.staleness !== null ? ` (k=${p.staleness})` : ""}, ${this.workers.length} worker(s)`;
  }

  /** Writes the timeline as Chrome trace-event JSON, which Perfetto and chrome://tracing open. */
  saveTrace(path: string): void {
    fs.writeFileSync(path, JSON.stringify(chromeTrace(this.history)));
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
        { title: "Placement", html: placementSvg(this.plan) },
        { title: "Summary", html: this.summaryHtml() },
        { title: "Throughput", figure: throughputFigure(this.history) },
        { title: "Step time per rank", figure: breakdownFigure(this.history) },
        { title: "Timeline", figure: timelineFigure(this.history) },
        ...(this.isStaged() ? [{ title: "Schedule as measured", figure: measuredScheduleFigure(this.history) }] : []),
        ...(this.pushes.length > 0 ? [{ title: "Staleness", figure: stalenessFigure([{ name: this.label(), pushes: this.pushes }]) }] : []),
      ],
      fs.readFileSync(plotlyPath(), "utf8"),
    );
    fs.writeFileSync(path, html);
  }

  /** The summary as an HTML table: what a notebook shows when a run is a cell's value. */
  summaryHtml(): string {
    const s = this.summary();
    const rows = s.workers
      .map((w) => `<tr><td>${w.rank}</td><td>${w.backend}</td><td>${w.device}</td><td>${w.computeMs.toFixed(1)}</td><td>${w.commMs.toFixed(1)}</td><td>${w.waitMs.toFixed(1)}</td><td>${s.stragglers.stepsLast[w.rank] ?? 0}</td></tr>`)
      .join("");
    const worst = s.stragglers.worst;
    const held = this.isStaged() ? `<p>${this.slowestStage(s)}</p>` : this.plan.strategy === "ps" ? this.psHtml() : worst ? `<p>Rank ${worst.rank} finished its computation last in ${worst.steps} of ${worst.of} steps (median lead ${s.stragglers.medianLeadMs.toFixed(1)} ms): the one the others waited for.</p>` : "";
    return (
      `<p><b>${s.steps} steps</b> over ${s.epochs} epoch(s), ${s.samples} samples in ${(s.wallMs / 1000).toFixed(1)} s on ${this.workers.length} worker(s). ` +
      `Throughput <b>${s.samplesPerSecond.toFixed(0)} samples/s</b> after ${s.warmupSteps} warm-up steps; median step ${s.medianStepMs.toFixed(1)} ms; loss ${s.firstLoss.toFixed(4)} &#8594; ${s.finalLoss.toFixed(4)}.</p>` +
      `<table><tr><th>rank</th><th>backend</th><th>device</th><th>compute ms</th><th>comm ms</th><th>wait ms</th><th>steps last</th></tr>${rows}</table>${held}` +
      this.membership.map((m) => `<p>rank ${m.rank} (${m.address}) <b>${m.change}</b> at ${(m.atMs / 1000).toFixed(1)} s; training went on from step ${m.step} with ${m.workers} worker(s)${m.cause ? `: ${m.cause.replace(/&/g, "&amp;").replace(/</g, "&lt;")}` : ""}</p>`).join("") +
      this.predictedHtml(s)
    );
  }

  private isStaged(): boolean {
    return this.plan.strategy !== "data" && this.plan.strategy !== "ps";
  }

  /** Parameter servers: pushes, staleness, departures, in words. */
  private psLines(): string[] {
    const p = this.pushes;
    if (p.length === 0) return [];
    const st = p.map((x) => x.staleness);
    const perRank = new Map<number, number>();
    for (const x of p) perRank.set(x.rank, (perRank.get(x.rank) ?? 0) + 1);
    const lines = [
      `${p.length} pushes; staleness (updates missed between pull and push): median ${median(st)}, max ${Math.max(...st)}; most steps ahead of the slowest: ${Math.max(...p.map((x) => x.lead))}`,
      `pushes per rank: ${[...perRank.entries()].sort((a, b) => a[0] - b[0]).map(([r, c]) => `rank ${r} ${c}`).join(", ")}; servers applied ${this.serverVersions.join(" / ")} update(s)`,
    ];
    for (const d of this.departures) {
      lines.push(`rank ${d.rank} left at ${(d.atMs / 1000).toFixed(1)} s (step ${d.step}): ${d.cause}; ${d.requeued} slice(s) handed to the others, ${d.alreadyApplied} already applied${d.partial ? `, ${d.partial} applied by only some servers` : ""}`);
    }
    return lines;
  }

  private psHtml(): string {
    return this.psLines().map((l) => `<p>${l.replace(/&/g, "&amp;").replace(/</g, "&lt;")}</p>`).join("");
  }

  /** In a pipeline every stage waits for the slowest one: it, not the last to finish, sets the pace. */
  private slowestStage(s: RunSummary): string {
    const slowest = s.workers.reduce((a, w) => (w.computeMs > a.computeMs ? w : a), s.workers[0]!);
    const stage = this.history[0]?.workers.find((w) => w.rank === slowest.rank)?.stage ?? 0;
    return `the slowest stage sets the pace: rank ${slowest.rank} (stage ${stage}), ${slowest.computeMs.toFixed(1)} ms of compute per step (median)`;
  }

  private predictedHtml(s: RunSummary): string {
    if (!s.predicted && s.bubble === null) return "";
    const row = (what: string, p: string, m: string): string => `<tr><td>${what}</td><td>${p}</td><td>${m}</td></tr>`;
    const pct = (v: number | null | undefined): string => (v === null || v === undefined ? "-" : `${(v * 100).toFixed(0)}%`);
    return (
      `<table><tr><th></th><th>predicted</th><th>measured</th></tr>` +
      row("samples/s", s.predicted ? s.predicted.samplesPerSecond.toFixed(0) : "-", s.samplesPerSecond.toFixed(0)) +
      row("step ms", s.predicted ? s.predicted.stepMs.toFixed(1) : "-", s.medianStepMs.toFixed(1)) +
      (s.bubble !== null ? row("bubble", pct(s.predicted?.bubble), pct(s.bubble)) : "") +
      `</table>`
    );
  }

  private bundles(): MimeBundle[] {
    const figures = [throughputFigure(this.history, undefined, this.marks()), breakdownFigure(this.history)];
    if (this.isStaged()) figures.push(measuredScheduleFigure(this.history));
    if (this.pushes.length > 0 && this.plan.strategy === "ps" && this.plan.mode === "async") figures.push(stalenessFigure([{ name: this.label(), pushes: this.pushes }]));
    return [{ "text/html": this.summaryHtml(), "text/plain": this.toString() }, ...figures.map(figureBundle)];
  }

  /** The placement diagram of the plan this run used. */
  placement(): MimeBundle {
    return planBundle(this.plan);
  }

  toString(): string {
    const s = this.summary();
    const lines = [
      `${s.steps} steps over ${s.epochs} epoch(s), ${s.samples} samples in ${(s.wallMs / 1000).toFixed(1)} s on ${this.workers.length} worker(s)`,
      `throughput ${s.samplesPerSecond.toFixed(0)} samples/s (after ${s.warmupSteps} warm-up steps), median step ${s.medianStepMs.toFixed(1)} ms`,
      `loss ${s.firstLoss.toFixed(4)} -> ${s.finalLoss.toFixed(4)}`,
      "rank  backend  device  compute ms  comm ms  wait ms  (medians per step)",
      ...s.workers.map(
        (w) =>
          `${String(w.rank).padEnd(6)}${w.backend.padEnd(9)}${w.device.padEnd(8)}${w.computeMs.toFixed(1).padStart(10)}${w.commMs.toFixed(1).padStart(9)}${w.waitMs.toFixed(1).padStart(9)}`,
      ),
    ];
    const worst = s.stragglers.worst;
    if (this.isStaged()) lines.push(this.slowestStage(s));
    else if (this.plan.strategy === "ps") lines.push(...this.psLines());
    else if (worst) lines.push(`rank ${worst.rank} finished computing last in ${worst.steps} of ${worst.of} steps (median lead ${s.stragglers.medianLeadMs.toFixed(1)} ms)`);
    for (const m of this.membership) lines.push(`rank ${m.rank} (${m.address}) ${m.change} at ${(m.atMs / 1000).toFixed(1)} s; training went on from step ${m.step} with ${m.workers} worker(s)${m.cause ? `: ${m.cause}` : ""}`);
    if (s.bubble !== null) lines.push(`bubble (measured, median per step): ${(s.bubble * 100).toFixed(0)}%`);
    if (s.predicted) {
      lines.push(`predicted ${s.predicted.samplesPerSecond.toFixed(0)} samples/s and ${s.predicted.stepMs.toFixed(1)} ms per step; measured ${s.samplesPerSecond.toFixed(0)} samples/s and ${s.medianStepMs.toFixed(1)} ms`);
    }
    return lines.join("\n");
  }
}
