import type * as tf from "@tensorflow/tfjs";
import * as fs from "node:fs";
import * as path from "node:path";
import { z } from "zod";
import { ConfigError } from "../errors/errors";
import { summarizeModel } from "../plan/model-summary";
import { BACKEND_CHOICES, type BackendChoice } from "../protocol/backend-names";
import { ClusterSpecSchema, crossCheck, DEFAULT_SPEC, HeartbeatSpecSchema, MAX_LOCAL_WORKERS, TimeoutsSpecSchema, WORKER_OUTPUT_LEVELS, WorkerOutputSpecSchema, WorkerUrlSchema, type ClusterSpec, type WorkerOutputSpec, type WorkersSpec } from "../config/cluster-spec";
import { checkStrategy, DEFAULT_STRATEGY, strategyNamed, type StrategyInput, type StrategyName } from "../strategies/strategy-table";
import { parseOrThrow } from "../config/zod-problem";
import { planOptions, type PlanRequest } from "./plan-request";
import { Cluster } from "./cluster";
import { launchOrigin, type LaunchOptions } from "./launch-options";
import type { LaunchOrigin } from "./live-clusters";
import { parseBytes } from "../config/bytes";
import type { Plan } from "../plan/plans";
import { makePlan } from "../strategies/make-plan";
import { nativeStepOptions } from "../backends/native/step/compile";
import { spmdPlace, type FromEnvOptions } from "../launchers/spmd";
import { serveAsMember } from "../launchers/spmd-member";
import { defined, FromEnvOptionsSchema, SlurmOptionsSchema, SshOptionsSchema, type SlurmOptions, type SshOptions } from "./launcher-options";
import { SshHostsSchema } from "../config/launcher-spec";
import { deepFreeze } from "../util/deep-freeze";

interface Draft extends Omit<ClusterSpec, "workers"> {
  readonly workers: WorkersSpec | undefined;
}

const count = z.number().int().min(1).max(MAX_LOCAL_WORKERS);

/** Each strategy's options, as strategy(name, options) takes them (docs/strategies.md has their meanings and defaults). */
export type StrategyOptionsMap = { [N in StrategyName]: StrategyInput<N> };

/** Options of strategy("data"). */
export type StrategyOptions = StrategyOptionsMap["data"];

/**
 * An immutable description of a cluster. Every method validates its argument at once and
 * returns a new builder; nothing is started until launch().
 */
export class ClusterBuilder {
  private constructor(private readonly draft: Readonly<Draft>) {
    Object.freeze(this);
  }

  /** @internal Use cluster(). */
  static empty(): ClusterBuilder {
    return new ClusterBuilder({ ...DEFAULT_SPEC, strategy: { name: DEFAULT_STRATEGY, options: strategyNamed(DEFAULT_STRATEGY).parse({}) }, workers: undefined });
  }

  private with(change: Partial<Draft>): ClusterBuilder {
    return new ClusterBuilder(deepFreeze({ ...this.draft, ...change }));
  }

  /** `n` worker processes on this machine, on CPU. */
  workers(n: number): ClusterBuilder {
    const c = parseOrThrow(count, n, "workers(n)", `pass a whole number from 1 to ${MAX_LOCAL_WORKERS}`);
    return this.with({ workers: { kind: "local", count: c, devices: "cpu" } });
  }

  /**
   * `n` local workers, each on a GPU of its own: a CUDA GPU where @tensorflow/tfjs-node-gpu can
   * drive it, else a WebGPU adapter (Dawn; Vulkan on Linux, Metal, D3D12). launch() fails naming
   * the GPUs it found when there are fewer than `n`, unless `fallback: "cpu"` (then it starts CPU
   * workers and says so in cluster.notes). `software: true` accepts software adapters (a CPU
   * rasteriser such as SwiftShader: correct and slow, for tests and lessons on machines without
   * a GPU), and says so.
   */
  gpus(n: number, options: { software?: boolean; fallback?: "cpu" } = {}): ClusterBuilder {
    const c = parseOrThrow(count, n, "gpus(n)", `pass a whole number from 1 to ${MAX_LOCAL_WORKERS}`);
    const o = parseOrThrow(z.strictObject({ software: z.boolean().optional(), fallback: z.literal("cpu").optional() }), options, "gpus(n, options)", 'options are software: true and fallback: "cpu"');
    return this.with({ workers: { kind: "local", count: c, devices: "gpu", ...o } });
  }

  /** Workers already running elsewhere (`meshtrain worker`), in rank order. Needs .token(). */
  connect(urls: readonly string[]): ClusterBuilder {
    const list = parseOrThrow(z.array(WorkerUrlSchema).min(1), urls, "connect(urls)", 'pass addresses like ["ws://10.0.0.2:7070", "ws://10.0.0.3:7070"]');
    return this.with({ workers: { kind: "remote", urls: list } });
  }

  /**
   * Workers that join this driver: launch() listens on `host:port` (127.0.0.1 and 7071 unless
   * given; port 0 picks one) and waits up to `timeoutMs` (600 s) for `workers` of them, started
   * anywhere with `meshtrain worker --join ws://<this host>:<port>`. Ranks come from each
   * worker's environment (Slurm, torchrun, TF_CONFIG...) or `--rank`, else the order of arrival.
   * With `browsers: true` the port also serves a worker page: launch() prints its invite link
   * (the token in its fragment) and hands it to `onInvite`, and every tab that opens it joins as
   * one of the `workers`. Needs .token().
   */
  join(options: { workers: number; host?: string; port?: number; timeoutMs?: number; browsers?: boolean; onInvite?: (url: string) => void }): ClusterBuilder {
    const o = parseOrThrow(
      z.strictObject({
        workers: z.number().int().min(1).max(1024),
        host: z.string().min(1).max(256).default("127.0.0.1"),
        port: z.number().int().min(0).max(65535).default(7071),
        timeoutMs: z.number().int().min(100).max(86_400_000).default(600_000),
        browsers: z.boolean().optional(),
        onInvite: z.custom<(url: string) => void>((f) => typeof f === "function", "must be a function taking the invite URL").optional(),
      }),
      options,
      "join(options)",
      'pass { workers: n }, and host: "0.0.0.0" for workers on other machines',
    );
    if (o.onInvite && !o.browsers) throw new ConfigError("join(options): onInvite is for browser tabs", { hint: "add browsers: true, or drop onInvite" });
    return this.with({ workers: { kind: "join", count: o.workers, host: o.host, port: o.port, timeoutMs: o.timeoutMs, ...(o.browsers ? { browsers: true } : {}), ...(o.onInvite ? { onInvite: o.onInvite } : {}) } });
  }

  /**
   * The same script run on every node (`srun -n 4 node train.js`, torchrun-style RANK /
   * WORLD_SIZE / MASTER_ADDR, TF_CONFIG, mpirun with MESHTRAIN_DRIVER): rank 0 becomes the
   * driver, listening on its host (`driver` or the environment's) at `port` (7071), and starts
   * its own worker; on every other rank launch() makes the process that rank's worker, which
   * joins rank 0 and ends the process when the driver is done, so code after launch() runs
   * on rank 0 alone. The token comes from .token() or MESHTRAIN_TOKEN.
   */
  fromEnv(options: FromEnvOptions & { timeoutMs?: number } = {}): ClusterBuilder {
    const o = parseOrThrow(FromEnvOptionsSchema, options, "fromEnv(options)", 'pass { driver: "host", port: 7071, workers: n, timeoutMs }, each optional');
    const place = spmdPlace(process.env, o);
    const envToken = process.env.MESHTRAIN_TOKEN;
    return this.with({
      workers: { kind: "join", count: place.worldSize, host: place.driverHost, port: place.port, timeoutMs: o.timeoutMs, launcher: { kind: "spmd", rank: place.rank, source: place.source } },
      ...(this.draft.token === undefined && envToken ? { token: envToken } : {}),
    });
  }

  /**
   * Workers started on other machines through this machine's ssh client (its keys, config and
   * known hosts; BatchMode, so never a password prompt): `workersPerHost` (1) on each host, ranks
   * in host order. A preflight checks every host first (ssh works, node and meshtrain of the
   * driver's version, the driver reachable back) and fails once naming each host that failed.
   * Each worker gets the token on its stdin and exits when that closes: on close(), when the
   * driver exits or dies. `command` runs meshtrain there (default: this node and meshtrain's
   * paths); `sshArgs` go to every ssh; `driverHost` is where hosts reach this driver. `ship`
   * ("auto") copies the worker bundle to a host where meshtrain is missing or of another
   * version, run there by `node` ("node"); "always" to every host, "never" to none; with
   * `bundleBackends` (["native", "wasm"]; add "webgpu" for Dawn on GPU hosts).
   */
  ssh(hosts: readonly string[], options: SshOptions = {}): ClusterBuilder {
    const list = parseOrThrow(SshHostsSchema, hosts, "ssh(hosts)", 'pass host names as ssh takes them, e.g. ["node1", "alice@node2:2222"]');
    const { port, timeoutMs, ...o } = parseOrThrow(SshOptionsSchema, options, "ssh(hosts, options)", "options are workersPerHost, command, sshArgs, driverHost, ship, node, bundleBackends, port and timeoutMs, each optional");
    return this.with({ workers: { kind: "join", count: list.length * o.workersPerHost, host: o.driverHost ?? "127.0.0.1", port, timeoutMs, launcher: defined({ kind: "ssh" as const, hosts: list, ...o }) } });
  }

  /**
   * Workers as a Slurm batch job, submitted from this machine (a login node): `nodes` x
   * `tasksPerNode` (1) workers started by srun, ranked by SLURM_PROCID, with the partition, time
   * limit, account and any other sbatch `args` given. launch() waits for them (a job pending
   * past `timeoutMs`, 600 s, is cancelled and reported with Slurm's reason); cluster.notes show
   * the job id and its nodes. close(), the driver's exit and an interrupt cancel the job.
   * `ship: "sbcast"` sends the worker bundle (of `bundleBackends`) with the job, "shared" extracts it once into `sharedDir`; the nodes run it by `node`.
   */
  slurm(options: SlurmOptions): ClusterBuilder {
    const { port, timeoutMs, ...o } = parseOrThrow(SlurmOptionsSchema, options, "slurm(options)", 'pass { nodes: 2 }, and partition, time, account, tasksPerNode, args as your cluster needs');
    return this.with({ workers: { kind: "join", count: o.nodes * o.tasksPerNode, host: o.driverHost ?? "127.0.0.1", port, timeoutMs, launcher: defined({ kind: "slurm" as const, ...o }) } });
  }

  /**
   * Parameter servers for strategy("ps"): `n` server processes on this machine, or the addresses
   * of servers already running elsewhere (`meshtrain worker`, reachable by every worker).
   */
  ps(servers: number | readonly string[]): ClusterBuilder {
    if (typeof servers === "number") {
      const c = parseOrThrow(count, servers, "ps(n)", `pass a whole number from 1 to ${MAX_LOCAL_WORKERS}`);
      return this.with({ servers: { kind: "local", count: c } });
    }
    const list = parseOrThrow(z.array(WorkerUrlSchema).min(1), servers, "ps(urls)", 'pass addresses like ["ws://10.0.0.9:7070"]');
    return this.with({ servers: { kind: "remote", urls: list } });
  }

  /**
   * Makes worker `rank` a straggler, for experiments: after computing each step it waits
   * (factor - 1) x the time that computation took, as if its device were `factor` times slower.
   * Plans and runs say so. Strategies "data" and "ps".
   */
  slowdown(rank: number, factor: number): ClusterBuilder {
    const r = parseOrThrow(z.number().int().min(0).max(4095), rank, "slowdown(rank, factor): rank", "pass a worker's rank, from 0");
    const f = parseOrThrow(z.number().min(1).max(1000), factor, "slowdown(rank, factor): factor", "pass a factor of at least 1, e.g. 3 for three times slower");
    return this.with({ slowdown: { ...(this.draft.slowdown ?? {}), [String(r)]: f } });
  }

  /** `n` more local workers, idle until a fit loses one (elastic data parallelism; model, pipeline, hybrid with checkpoints): a spare takes its place. */
  spares(n: number): ClusterBuilder {
    return this.with({ spares: parseOrThrow(count, n, "spares(n)", `pass a whole number from 1 to ${MAX_LOCAL_WORKERS}`) });
  }

  /** The cluster token. Local clusters make a random one when this is not given. */
  token(secret: string): ClusterBuilder {
    const t = parseOrThrow(z.string().min(16, "must be at least 16 characters").max(1024), secret, "token(secret)", "use a long random secret, e.g. `openssl rand -hex 16`");
    return this.with({ token: t });
  }

  /**
   * Encrypted links to workers started with `meshtrain worker --tls-cert --tls-key`: `ca` is the
   * PEM certificate (or authority) to trust besides the system's. Use with wss:// addresses.
   */
  tls(options: { ca: string | Buffer }): ClusterBuilder {
    const ca = typeof options?.ca === "string" ? options.ca : Buffer.isBuffer(options?.ca) ? options.ca.toString("utf8") : undefined;
    const t = parseOrThrow(z.string().regex(/-----BEGIN CERTIFICATE-----/, "must be a PEM certificate"), ca, "tls({ ca })", "pass the PEM text of the certificate the workers were started with, e.g. fs.readFileSync(\"cert.pem\")");
    return this.with({ tls: { ca: t } });
  }

  /**
   * Files each local worker imports when it starts, before any model is built: modules that
   * register custom layers (tf.serialization.registerClass) so workers can build models using
   * them. Paths are resolved against the current directory and must exist now. Workers started
   * elsewhere must have the files and load them themselves (`meshtrain worker --module <file>`):
   * workers never run code that arrives over the wire.
   */
  modules(files: readonly string[]): ClusterBuilder {
    const list = parseOrThrow(z.array(z.string().min(1)).max(64), files, "modules(files)", 'pass file paths, e.g. .modules(["./layers.js"])');
    const resolved = list.map((f) => path.resolve(f));
    const missing = resolved.filter((f) => !fs.existsSync(f));
    if (missing.length > 0) {
      throw new ConfigError(`modules(files): ${missing.join(", ")} ${missing.length === 1 ? "does" : "do"} not exist`, {
        hint: `paths are resolved against the current directory (${process.cwd()}); give the built JavaScript file that registers the layers`,
      });
    }
    return this.with({ modules: resolved });
  }

  /** Force a TF.js backend on every worker; "auto" (default) takes the best one present. */
  backend(name: BackendChoice): ClusterBuilder {
    const b = parseOrThrow(z.enum(BACKEND_CHOICES), name, "backend(name)", `choose one of ${BACKEND_CHOICES.join(", ")}`);
    return this.with({ backend: b });
  }

  /**
   * How the workers train together: "data" (synchronous data parallelism), "ps" (parameter
   * servers, async or sync, with .ps(n)), "model" (layer
   * ranges on different workers), "pipeline" (plus micro-batches and a schedule), "hybrid"
   * (replicated pipelines) or "auto" (the planner picks from memory estimates).
   */
  strategy<N extends StrategyName>(name: N, ...options: {} extends StrategyInput<N> ? [StrategyInput<N>?] : [StrategyInput<N>]): ClusterBuilder {
    // Each strategy validates its own options (the table finds it by name).
    return this.with({ strategy: { name, options: strategyNamed(name).parse(options[0] ?? {}) } });
  }

  /**
   * Caps the memory each worker may use ("256MB", "1.5GiB", or bytes): workers refuse to build
   * what their estimate says would exceed it, and the planner splits models to fit it.
   */
  memory(limit: string | number): ClusterBuilder {
    return this.with({ memoryCapBytes: parseBytes(limit) });
  }

  /**
   * Heartbeat interval and timeout in ms; a silent worker is reported within 2 x timeoutMs (time
   * the driver's own thread stood still is not counted). Within a fit, workers leave a driver
   * silent past timeoutMs: raise it above the longest a callback computes without yielding.
   * Between fits they wait idleTimeoutMs (default 10 minutes) for it, so a notebook cell may
   * compute in the driver's thread that long without losing the cluster.
   */
  heartbeat(options: { intervalMs?: number; timeoutMs?: number; idleTimeoutMs?: number }): ClusterBuilder {
    const hb = parseOrThrow(HeartbeatSpecSchema, { ...this.draft.heartbeat, ...options }, "heartbeat options");
    return this.with({ heartbeat: hb });
  }

  /**
   * Limits on waits, in ms: connectMs (start/reach a worker), stepMs (one training step), and
   * stallMs: after this long without a finished step the driver prints who waits for whom.
   */
  timeouts(options: { connectMs?: number; stepMs?: number; stallMs?: number }): ClusterBuilder {
    const t = parseOrThrow(TimeoutsSpecSchema, { ...this.draft.timeouts, ...options }, "timeouts");
    return this.with({ timeouts: t });
  }

  /**
   * What the workers print reaches this process with its rank as prefix (`[rank 1] ...`):
   * "all" (default), "warnings" (their stderr only: warnings and errors) or "none". At most
   * `linesPerSecond` lines per worker are shown (default 20; the rest are counted). Every line
   * is kept in the run's `logs` whatever the level.
   */
  workerOutput(level: WorkerOutputSpec["level"], options: { linesPerSecond?: number } = {}): ClusterBuilder {
    const o = parseOrThrow(WorkerOutputSpecSchema, { ...this.draft.workerOutput, ...options, level }, "workerOutput", `level is one of ${WORKER_OUTPUT_LEVELS.map((l) => `"${l}"`).join(", ")}; linesPerSecond a whole number from 1`);
    return this.with({ workerOutput: o });
  }

  /**
   * Where the all-reduce's bytes travel. "auto" (the default): the native data plane (plain TCP
   * sockets driven by the native addon, reducing in C) when every worker has it and TLS is off, unless
   * strategy "data" times both planes on its ring and the WebSocket links are 1.2x faster; else the
   * WebSocket links. "native" insists (a ConfigError says which worker cannot); "websocket" keeps
   * every byte on the control plane's links. Runs and plans say which path ran and why.
   */
  dataPlane(path: "auto" | "native" | "websocket"): ClusterBuilder {
    const p = parseOrThrow(ClusterSpecSchema.shape.dataPlane.unwrap(), path, "dataPlane(path)", 'pass "auto", "native" or "websocket"');
    return this.with({ dataPlane: p });
  }

  /** Wire limits: the largest WebSocket message accepted, and elements per tensor chunk. */
  limits(options: { maxFrameBytes?: number; chunkElements?: number }): ClusterBuilder {
    const merged = { maxFrameBytes: this.draft.maxFrameBytes, chunkElements: this.draft.chunkElements, ...options };
    const l = parseOrThrow(ClusterSpecSchema.pick({ maxFrameBytes: true, chunkElements: true }), merged, "limits");
    return this.with(l);
  }

  /** The frozen, fully checked spec. Throws ConfigError, with the arithmetic, if it cannot work. */
  spec(): ClusterSpec {
    if (this.draft.workers === undefined) {
      throw new ConfigError("the cluster has no workers", {
        hint: 'say where to run: .workers(n) for local CPU workers, .gpus(n), .connect(["ws://host:7070", ...]) or .join({ workers: n })',
      });
    }
    const spec = parseOrThrow(ClusterSpecSchema, this.draft, "cluster spec");
    crossCheck(spec);
    checkStrategy(spec);
    return deepFreeze(spec);
  }

  /** The plan the strategy makes for `model` on this cluster. Pure: starts nothing. */
  plan(model: tf.LayersModel, options: PlanRequest = {}): Plan {
    const spec = this.spec();
    return makePlan(spec, summarizeModel(model), { ...planOptions(options), ...nativeStepOptions(model) });
  }

  /**
   * Starts (or reaches) the workers and connects them. The first method that does I/O. In a
   * notebook, re-running the cell closes the cluster it launched before, unless `keep` or `name`.
   */
  launch(options: LaunchOptions = {}): Promise<Cluster> {
    let spec: ClusterSpec;
    let origin: LaunchOrigin;
    try {
      spec = this.spec();
      origin = launchOrigin(options);
    } catch (err) {
      return Promise.reject(err);
    }
    const w = spec.workers;
    if (w.kind === "join" && w.launcher?.kind === "spmd" && w.launcher.rank > 0) {
      return serveAsMember(spec, { rank: w.launcher.rank, source: w.launcher.source, worldSize: w.count, host: w.host, port: w.port, timeoutMs: w.timeoutMs });
    }
    return Cluster.launch(spec, origin);
  }

  /** One line: where the workers run, the strategy and the backend. */
  toString(): string {
    const w = this.draft.workers;
    const where = !w ? "no workers yet" : w.kind === "local" ? `${w.count} local ${w.devices} worker(s)` : w.kind === "join" ? `${w.count} joining worker(s) at ${w.host}:${w.port}` : `${w.urls.length} remote worker(s)`;
    return `cluster(): ${where}, strategy "${this.draft.strategy.name}", backend "${this.draft.backend}"`;
  }
}

/** Starts describing a cluster: `cluster().workers(3).strategy("data").launch()`. */
export function cluster(): ClusterBuilder {
  return ClusterBuilder.empty();
}
