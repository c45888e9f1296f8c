import type * as tf from "@tensorflow/tfjs";
import type { Dataset } from "../data/dataset";
import { AbortError, StateError, type MeshtrainError } from "../errors/errors";
import { makeDisplayable } from "../viz/displayable";
import { TrainingRun } from "./training-run";
import { summarizeModel } from "../plan/model-summary";
import { workerCount, type ClusterSpec } from "../config/cluster-spec";
import { resolveFitOptions, type FitOptions } from "../driver/fit-options";
import { runFit, type FitHost } from "../driver/fit";
import { fitStrategyOf } from "./fit-strategy";
import type { WorkerSnapshot } from "../config/worker-snapshot";
import { addWorker, lateJoiner, startWorkers, type LaunchHooks } from "./launch";
import { RUN_MEMBERS, withAwaitHint } from "./await-hint";
import type { JoinListener } from "./join-listener";
import { LossWatch } from "../driver/loss-watch";
import { planOptions, type PlanRequest } from "./plan-request";
import type { WorkerHandle } from "../members/worker-handle";
import type { Plan } from "../plan/plans";
import { devicesOf, withDriver } from "../driver/devices";
import { nativeStepOptions } from "../backends/native/step/compile";
import { type FitContext } from "../driver/fit-context";
import { makePlan } from "../strategies/make-plan";
import { clusterHtml, clusterText, describeLine, type ClusterParts } from "./cluster-text";
import { FitAborted, FitStop } from "../driver/fit-stop";
import { configureLinks } from "../driver/configure-links";
import { localProcessOf, refuseAdd, refuseUnusable, type ClusterState } from "./usable";
import { register, replaceEarlier, unregister, type LaunchOrigin, type LiveCluster } from "./live-clusters";
import { wiringKey, type Wiring } from "../plan/wiring";
import { measureDataRing } from "./data-ring";
import { WorkerOutput } from "../members/worker-output";
import { ModelProfiles } from "../driver/model-profiles";
import { stopMembers } from "./stop-members";
import { Spares } from "./spares";
import type { ModelProfile } from "../plan/profile";
import type { RingSpeed } from "../plan/predict";
import { MeasuredRings } from "../driver/ring-probe";
import { timedPlane } from "../driver/ring-planes";
import type { LogLine } from "../metrics/records";
import type { DataPlaneChoice } from "../protocol/data-plane";

/**
 * A running cluster: workers joined in one session with their ring connected. Made by
 * `cluster()...launch()`; trains with fit(); must be closed with close().
 */
export class Cluster implements LiveCluster {
  private handles: WorkerHandle[] = [];
  private readonly launchedAt = Date.now();
  /** The running fit's stop request, and the fit itself (close() waits for it to stop). */
  private fitStop: FitStop | undefined;
  private running: Promise<unknown> | undefined;
  private servers: WorkerHandle[] = []; // strategy "ps"
  /** While a fit that survives departures runs: where a lost worker is reported instead of failing the cluster. */
  private onDeparture: { handler: (h: WorkerHandle, err: MeshtrainError) => void; servers: boolean } | null = null;
  /** While an elastic fit runs: where a worker added with add() is handed. */
  private onJoin: ((h: WorkerHandle) => void) | null = null;
  private session = "";
  private adding: Promise<void> = Promise.resolve();
  private token = "";
  private joins: JoinListener | undefined;
  /** `.spares(n)`: workers idle until an elastic fit loses one; add() takes them first. */
  private spares = Spares.none();
  private joined = 0; // ranks that joined during a fit (add())
  private readonly departed = new Map<number, MeshtrainError>();
  private state_: ClusterState = "ready";
  /** The first loss that failed the cluster, and the waits that end with it. */
  private readonly losses = new LossWatch();
  private step: number | undefined;
  private stopping: Promise<void> | undefined;
  private notes_: string[] = [];
  private readonly profiles = new ModelProfiles();
  /** How the workers are connected now (wiringKey), to reconnect only when a fit needs otherwise. */
  private wired: string | null = null;
  private readonly rings = new MeasuredRings();
  /** Where the current wiring's all-reduces travel, if it has any. */
  private dataPlane: DataPlaneChoice | undefined;

  /** Where the workers' output lines arrive, are shown and kept. */
  private readonly output: WorkerOutput;

  /** `name`: the one given with launch({ name }), if any. */
  private constructor(readonly spec: ClusterSpec, readonly name: string | undefined) {
    this.output = new WorkerOutput(spec.workerOutput);
    makeDisplayable(this, () => ({ "text/html": clusterHtml(this.describeParts()), "text/plain": this.toString() }), () => this.toString());
  }

  /** Use `cluster()...launch()`. */
  static async launch(spec: ClusterSpec, origin: LaunchOrigin = {}): Promise<Cluster> {
    const replacing = replaceEarlier(origin);
    if (replacing) await replacing;
    const c = new Cluster(spec, origin.name);
    const launched = await startWorkers(spec, c.hooks());
    c.handles = launched.handles;
    c.servers = launched.servers;
    c.session = launched.session;
    c.token = launched.token;
    c.notes_ = launched.notes;
    c.joins = launched.joins;
    c.spares = await Spares.start(spec, { session: c.session, token: c.token, firstRank: c.handles.length, hooks: c.hooks(), orStop: () => c.stopAll("a spare did not start") });
    for (const note of launched.notes) process.stderr.write(`meshtrain: ${note}\n`);
    register(c, origin);
    return c;
  }

  private hooks(): LaunchHooks {
    return { stepNow: () => this.step, onLost: (h, err) => this.workerLost(h, err), output: this.output };
  }

  /** What the workers printed (the last 10,000 lines), each run's share also in its `logs`. */
  get logs(): readonly LogLine[] {
    return this.output.all();
  }

  /** "ready" for a fit, "fitting", "failed" (a worker was lost: launch a new cluster) or "closed". */
  get state(): ClusterState {
    return this.state_;
  }

  /** Remarks from launching: backend fallbacks and their reasons. */
  get notes(): readonly string[] {
    return this.notes_;
  }

  /** Every worker in rank order: its address, whether it runs on this machine, and what it reported when it joined. */
  get workers(): readonly WorkerSnapshot[] {
    return this.handles.map((h) => h.snapshot());
  }

  /** Spare workers still idle (`.spares(n)`); one that takes a lost worker's place is in `workers` from then on. */
  get idleSpares(): readonly WorkerSnapshot[] {
    return this.spares.handles.map((h) => h.snapshot());
  }

  /** Parameter servers (strategy "ps"), in server order; `rank` is the server's index. */
  get parameterServers(): readonly WorkerSnapshot[] {
    return this.servers.map((h) => h.snapshot());
  }

  /** The number of workers (parameter servers not counted). */
  get size(): number {
    return workerCount(this.spec);
  }

  /** The plan this cluster's strategy makes for `model`, with its workers' devices and the model's profile if profile() took one (no messages are sent). */
  plan(model: tf.LayersModel, options: PlanRequest = {}): Plan {
    const o = planOptions(options), profile = this.profiles.find(model, o.batchSize);
    const ring = this.rings.find(this.wired);
    return makePlan(this.spec, summarizeModel(model), { ...o, ...nativeStepOptions(model), devices: this.handles.map((h) => devicesOf(h)), serverDevices: this.servers.map((h) => devicesOf(h)), ...(profile ? { profile } : {}), ...(ring ? { ring } : {}), ...withDriver() });
  }

  /** Times `model`'s layers and replica step on the slowest worker at `batchSize` (and an eighth of it), and under strategy "data" the data ring's all-reduce, so that plan() and fit() predict from measured times. fit() does this itself. */
  async profile(model: tf.LayersModel, options: Omit<FitOptions, "epochs"> & { batchSize: number }): Promise<ModelProfile> {
    const o = resolveFitOptions(options, model);
    return this.profiles.take(this.handles, model, { batchSize: options.batchSize, loss: o.loss, heads: o.heads, optimizer: o.optimizer }).then(async (p) => (await this.measuredRing(), p));
  }

  /** Strategy "data": the ring wired as its fits use it, timed on both planes where the choice is ours (ring-probe.ts). */
  private measuredRing(): Promise<RingSpeed | undefined> {
    return measureDataRing({ spec: this.spec, handles: this.handles, rings: this.rings, guard: (p) => this.losses.guard(p), connect: (w, o) => this.connect(w, o), wired: () => this.wired!, plane: () => this.dataPlane! });
  }

  /**
   * Trains `model` on `dataset` with the cluster's strategy. When it resolves, `model` holds the
   * trained weights. A lost worker rejects with WorkerLostError naming it, and stops the cluster.
   */
  fit(model: tf.LayersModel, dataset: Dataset, options: FitOptions = {}): Promise<TrainingRun> {
    const running = this.fitOnce(model, dataset, options);
    this.running = running.catch(() => undefined);
    return withAwaitHint(running, "cluster.fit(...)", RUN_MEMBERS);
  }

  private async fitOnce(model: tf.LayersModel, dataset: Dataset, options: FitOptions): Promise<TrainingRun> {
    this.usable("fit");
    const stop = new FitStop(options.signal);
    this.fitStop = stop;
    this.state_ = "fitting";
    try {
      const record = await runFit(this.fitHost(), fitStrategyOf(this.spec), model, dataset, options, stop);
      this.state_ = "ready";
      return new TrainingRun(record);
    } catch (err) {
      if ((this.state_ as ClusterState) === "closed") throw new StateError("the cluster was closed while fit was running", { cause: err });
      if (this.losses.failure) throw this.losses.failure;
      if (err instanceof FitAborted) {
        // Every worker is in a known state: the cluster stays usable, and the user gets the error itself.
        this.state_ = "ready";
        if (err.error instanceof AbortError && err.partial) err.error.run = new TrainingRun(err.partial);
        throw err.error;
      }
      // Workers may be mid-step or mid-all-reduce; only a fresh cluster is known to be consistent.
      this.fail(err as MeshtrainError);
      throw err;
    } finally {
      stop.dispose();
      this.fitStop = undefined;
      this.onDeparture = null;
      this.onJoin = null;
    }
  }

  /** What one fit borrows from this cluster. */
  private fitHost(): FitHost {
    return {
      spec: this.spec,
      workers: this.handles,
      members: () => [...this.handles, ...this.servers],
      output: this.output,
      step: () => this.step,
      profileFor: (model, o, request) => this.profiles.forFit(this.handles, model, o, request, (ms) => this.losses.within(ms)),
      ring: () => this.measuredRing(),
      dataPlane: () => this.dataPlane,
      context: (stop) => this.fitContext(stop),
    };
  }

  /** What a strategy's runtime gets from this cluster for one fit. */
  private fitContext(stop: FitStop): FitContext {
    return {
      spec: this.spec,
      workers: this.handles,
      servers: this.servers,
      connect: (w, o) => this.connect(w, o),
      survive: (handler, o) => void (this.onDeparture = { handler, servers: o?.servers === true }),
      replace: (orNew) => this.enlist(undefined, orNew),
      // The lost one's rank is the spare's from now on: wired anew, and the loss no longer the cluster's.
      substitute: (lost) => (lost.role === "worker" && this.departed.delete(lost.rank), (this.wired = null), this.spares.substitute(lost, lost.role === "ps" ? this.servers : this.handles)),
      admit: (handler) => {
        this.onJoin = handler;
        this.joins?.admitTabs(() => this.onJoin !== null, () => this.add());
      },
      guard: (p) => this.losses.guard(p),
      lossWithin: (ms) => this.losses.within(ms),
      setStep: (s) => void (this.step = s),
      stopRequested: () => stop.requested,
    };
  }

  /**
   * Kills local worker `rank` at once (SIGKILL), as a crash would, for experiments with departures
   * (e.g. from onStep): elastic fits and async parameter servers go on; other fits fail naming it.
   */
  kill(rank: number): void {
    localProcessOf(this.handles, rank, "kill").kill("SIGKILL");
  }

  /**
   * Adds a worker to a running elastic fit (strategy("data", { elastic })): the worker at `url`
   * (`meshtrain worker`), else an idle spare, else a new local worker. It gets the current weights
   * and optimizer state and joins at the next step boundary; resolves with its rank once it has.
   */
  add(url?: string): Promise<number> {
    return this.enlist(url, true) as Promise<number>;
  }

  /** add(), or with `orNew` false only a spare: null when none is idle. */
  private enlist(url: string | undefined, orNew: boolean): Promise<number | null> {
    const refused = refuseAdd({ elasticFit: this.state_ === "fitting" && this.onJoin !== null, remote: this.spec.workers.kind === "remote" }, url);
    if (refused) return Promise.reject(refused);
    // One at a time, so that ranks follow the order of the calls.
    const added = this.adding.then(async () => {
      const rank = this.handles.length;
      const spare = url === undefined ? this.spares.take(rank) : undefined;
      const h = spare ?? (orNew ? await addWorker(this.spec, { session: this.session, token: this.token, rank, url, hooks: this.hooks(), joins: this.joins }) : undefined);
      if (!h) return null;
      if (!this.onJoin) throw await lateJoiner(h, rank);
      this.handles.push(h);
      this.joined++;
      this.onJoin(h);
      return rank;
    });
    this.adding = added.then(() => undefined, () => undefined);
    return added;
  }

  /** Stops local workers (they exit) and releases remote ones. Safe to call more than once. */
  async close(): Promise<void> {
    if (this.state_ === "fitting" && this.fitStop) {
      // As an interrupt does: the fit stops after the step in flight and rejects with AbortError.
      this.fitStop.request("fit aborted: cluster.close() was called during it");
      await Promise.race([this.running, new Promise((resolve) => setTimeout(resolve, Math.min(this.spec.timeouts.stepMs, 30_000)).unref())]);
    }
    if (this.state_ === "closed") return this.stopping;
    this.state_ = "closed";
    unregister(this);
    this.stopping ??= this.stopAll("the driver closed the cluster");
    return this.stopping;
  }

  /** The workers as a table: rank, address, backend, device, memory. */
  toString(): string {
    return clusterText(this.describeParts());
  }

  /** One line for the registry of live clusters: size, strategy, age, state. */
  describe(): string {
    return describeLine(this.describeParts(), this.launchedAt);
  }

  private describeParts(): ClusterParts {
    return { size: this.size, strategy: this.spec.strategy.name, state: this.state_, workers: this.workers, servers: this.servers, notes: this.notes_, departed: this.departed, spares: this.idleSpares };
  }

  /** Asks the running fit, if any, to stop at its next step boundary. */
  interrupt(reason: string): boolean {
    if (this.state_ !== "fitting" || !this.fitStop) return false;
    this.fitStop.request(reason);
    return true;
  }

  /** Connects the workers as `wiring` says, unless they already are; on `plane`, or the one timing chose for this wiring, else the rule's. */
  private async connect(wiring: Wiring, o: { members?: readonly WorkerHandle[]; generation?: number; plane?: DataPlaneChoice } = {}): Promise<void> {
    const members = o.members ?? this.handles;
    const key = `${wiringKey(wiring)}/${members.map((h) => h.rank).join(",")}/${o.generation ?? ""}`;
    const plane = o.plane ?? timedPlane(this.rings.find(key));
    if (this.wired !== key || (plane && plane.path !== this.dataPlane?.path)) {
      this.wired = null;
      this.dataPlane = await this.losses.guard(configureLinks(this.spec, this.handles, this.servers, wiring, members, o.generation, plane));
      this.wired = key;
    } else if (plane) this.dataPlane = plane;
  }

  private usable(what: string): void {
    refuseUnusable(what, { state: this.state_, failure: this.losses.failure, joined: this.joined, departed: this.departed });
  }

  private workerLost(h: WorkerHandle, err: MeshtrainError): void {
    if (this.state_ === "closed" || this.losses.failure) return;
    if (this.spares.has(h)) return this.spares.drop(h, err);
    const d = this.onDeparture;
    if (d && (h.role === "worker" || d.servers)) {
      h.fence();
      if (h.role === "worker") this.departed.set(h.rank, err);
      d.handler(h, err);
      return;
    }
    this.fail(err);
  }

  private fail(err: MeshtrainError): void {
    if (this.losses.failure || this.state_ === "closed") return;
    this.losses.fail(err);
    this.state_ = "failed";
    unregister(this);
    this.stopping = this.stopAll(`cluster stopped: ${err.summary}`);
  }

  private stopAll(reason: string): Promise<void> {
    return stopMembers(this.joins, [...this.handles, ...this.servers, ...this.spares.handles], reason);
  }
}
