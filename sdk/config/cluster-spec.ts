import { z } from "zod";
import { ConfigError } from "../errors/errors";
import { BACKEND_CHOICES } from "../protocol/backend-names";
import { LauncherSpecSchema } from "./launcher-spec";

/**
 * The frozen description of a cluster. The fluent builder produces it; planners read it; the
 * launcher turns it into processes and connections. Units are in the field names.
 */

export const MAX_LOCAL_WORKERS = 64;

export const WorkerUrlSchema = z
  .string()
  .regex(/^wss?:\/\/[^\s/]+(:\d+)?\/?$/, "must look like ws://host:port or wss://host:port");

export const WorkersSpecSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("local"),
    /** Number of worker processes started on this machine. */
    count: z.number().int().min(1).max(MAX_LOCAL_WORKERS),
    /** "gpu": one GPU per worker (CUDA through tfjs-node-gpu, or a WebGPU adapter); launch fails when there are too few. */
    devices: z.enum(["cpu", "gpu"]),
    /** With "gpu": software adapters (CPU rasterisers) count as GPUs too: for tests and lessons. */
    software: z.boolean().optional(),
    /** With "gpu": start CPU workers when there are too few GPUs, and say so, instead of failing. */
    fallback: z.enum(["cpu"]).optional(),
  }),
  z.strictObject({
    kind: z.literal("remote"),
    /** Workers already running (`meshtrain worker`), in rank order. */
    urls: z.array(WorkerUrlSchema).min(1).max(1024),
  }),
  z.strictObject({
    kind: z.literal("join"),
    /** Workers that join (`meshtrain worker --join <address>`) before launch() resolves. */
    count: z.number().int().min(1).max(1024),
    /** Where the driver listens for them: loopback unless a host is given. */
    host: z.string().min(1).max(256),
    port: z.number().int().min(0).max(65535),
    /** How long launch() waits for all of them. */
    timeoutMs: z.number().int().min(100).max(86_400_000),
    /** Who starts them, when the driver does (fromEnv, ssh, Slurm); absent when the user does. */
    launcher: LauncherSpecSchema.optional(),
    /** Browser tabs may join by opening the invite link: the join port serves the worker page and relays the tabs' connections. */
    browsers: z.boolean().optional(),
    /** Called with the invite link as soon as the driver listens (a notebook draws it). */
    onInvite: z
      .custom<(url: string) => void>((f) => typeof f === "function", "must be a function taking the invite URL")
      .optional(),
  }),
]);

export const HeartbeatSpecSchema = z.strictObject({
  /** How often each side pings the other. Default 1000 ms. */
  intervalMs: z.number().int().min(20).max(60_000),
  /** Silence longer than this makes a peer lost. Default 10000 ms. */
  timeoutMs: z.number().int().min(100).max(3_600_000),
  /**
   * Between fits, how long a worker waits for a silent driver before it leaves (never less than
   * timeoutMs). A notebook's driver answers nothing while a cell computes or compiles; a driver
   * that is gone closes its connection, so this only frees workers whose driver's machine
   * vanished. Default 600000 ms.
   */
  idleTimeoutMs: z.number().int().min(100).max(86_400_000),
});

export const TimeoutsSpecSchema = z.strictObject({
  /** Start a local worker, or reach and authenticate a remote one. Default 60000 ms. */
  connectMs: z.number().int().min(100).max(3_600_000),
  /** One training step on every worker, all-reduce included. Default 600000 ms. */
  stepMs: z.number().int().min(100).max(86_400_000),
  /** A fit with no step finished for this long prints a stall report (who waits for whom). Default 30000 ms. */
  stallMs: z.number().int().min(100).max(86_400_000).default(30_000),
});

export const WORKER_OUTPUT_LEVELS = ["all", "warnings", "none"] as const;
export const WorkerOutputSpecSchema = z.strictObject({
  /** What of the workers' output is shown: all of it, stderr only (warnings and errors), or none. run.logs keeps all. */
  level: z.enum(WORKER_OUTPUT_LEVELS),
  /** Lines shown per worker and second (bursts of five seconds' worth); the rest are counted. Default 20. */
  linesPerSecond: z.number().int().min(1).max(100_000),
});

export const ClusterSpecSchema = z.strictObject({
  workers: WorkersSpecSchema,
  /** Shared secret every connection proves it knows. Local clusters make a random one. */
  token: z.string().min(16, "must be at least 16 characters").max(1024).optional(),
  backend: z.enum(BACKEND_CHOICES),
  /**
   * How the workers train together: a strategy's name and its options, which the strategy
   * validates itself (strategy(name, options) on the builder). Defaults: "data".
   */
  strategy: z.strictObject({ name: z.string().min(1).max(64), options: z.record(z.string(), z.unknown()) }),
  heartbeat: HeartbeatSpecSchema,
  timeouts: TimeoutsSpecSchema,
  workerOutput: WorkerOutputSpecSchema,
  /** Largest single WebSocket message either side accepts; tensors are chunked below it. Default 64 MiB. */
  maxFrameBytes: z
    .number()
    .int()
    .min(64 * 1024)
    .max(1024 * 1024 * 1024),
  /** Elements per binary chunk for tensors and all-reduce traffic. Default 256 Ki elements (1 MiB). */
  chunkElements: z
    .number()
    .int()
    .min(256)
    .max(16 * 1024 * 1024),
  /**
   * Memory each worker may use, in bytes: workers refuse to build what their estimate says
   * exceeds it, and the planner splits models to fit it. Default: the device's own memory.
   */
  memoryCapBytes: z
    .number()
    .int()
    .min(1024 * 1024)
    .optional(),
  /**
   * Files every local worker imports at start (absolute paths), e.g. modules that register
   * custom layer classes with tf.serialization.registerClass. Workers started elsewhere load
   * their own with `meshtrain worker --module <file>`: code never travels over the wire.
   */
  modules: z.array(z.string().min(1).max(4096)).max(64).optional(),
  /** Where all-reduce bytes travel: "native" (TCP, the addon), "websocket", or "auto" (the default; see builder.dataPlane). */
  dataPlane: z.enum(["auto", "native", "websocket"]).optional(),
  /** wss:// workers: the PEM certificate authority (or self-signed certificate) to trust besides the system's. */
  tls: z
    .strictObject({
      ca: z
        .string()
        .min(1)
        .max(256 * 1024),
    })
    .optional(),
  /** Parameter-server processes for strategy "ps": started on this machine, or already running elsewhere. */
  servers: z
    .discriminatedUnion("kind", [
      z.strictObject({ kind: z.literal("local"), count: z.number().int().min(1).max(MAX_LOCAL_WORKERS) }),
      z.strictObject({ kind: z.literal("remote"), urls: z.array(WorkerUrlSchema).min(1).max(1024) }),
    ])
    .optional(),
  /**
   * Stragglers made on purpose, for experiments: rank -> factor. A slowed worker waits
   * (factor - 1) x its measured compute time after computing every step.
   */
  slowdown: z.record(z.string().regex(/^\d+$/), z.number().min(1).max(1000)).optional(),
  /** Local workers started idle beside the members, each to take a lost member's place in an elastic fit. */
  spares: z.number().int().min(1).max(MAX_LOCAL_WORKERS).optional(),
});

export type WorkersSpec = z.infer<typeof WorkersSpecSchema>;
export type ServersSpec = NonNullable<z.infer<typeof ClusterSpecSchema>["servers"]>;
export type StrategySpec = ClusterSpec["strategy"];
export type HeartbeatSpec = z.infer<typeof HeartbeatSpecSchema>;
export type TimeoutsSpec = z.infer<typeof TimeoutsSpecSchema>;
export type WorkerOutputSpec = z.infer<typeof WorkerOutputSpecSchema>;
/** The frozen description of a cluster the builder makes (builder.spec()): what launch() starts and plans read. */
export type ClusterSpec = Readonly<z.infer<typeof ClusterSpecSchema>>;

export const DEFAULT_SPEC: Omit<ClusterSpec, "workers"> = {
  backend: "auto",
  strategy: { name: "data", options: {} },
  heartbeat: { intervalMs: 1000, timeoutMs: 10_000, idleTimeoutMs: 600_000 },
  timeouts: { connectMs: 60_000, stepMs: 600_000, stallMs: 30_000 },
  workerOutput: { level: "all", linesPerSecond: 20 },
  maxFrameBytes: 64 * 1024 * 1024,
  chunkElements: 256 * 1024,
};

/** Number of workers the spec describes. */
export function workerCount(spec: ClusterSpec): number {
  return spec.workers.kind === "remote" ? spec.workers.urls.length : spec.workers.count;
}

/** Number of parameter servers the spec describes (0 without .ps()). */
export function serverCount(spec: ClusterSpec): number {
  const s = spec.servers;
  return !s ? 0 : s.kind === "local" ? s.count : s.urls.length;
}

/** The slowdown factor of each rank (1 for ranks not slowed down). */
export function slowdownOf(spec: ClusterSpec, rank: number): number {
  return spec.slowdown?.[String(rank)] ?? 1;
}

/** Checks that need more than one field; each message shows the arithmetic. */
export function crossCheck(spec: ClusterSpec): void {
  checkLinks(spec);
  checkServers(spec);
  checkExtras(spec);
}

/** Heartbeats, tokens, addresses and TLS: what connecting needs. */
function checkLinks(spec: ClusterSpec): void {
  const hb = spec.heartbeat;
  if (hb.timeoutMs < 2 * hb.intervalMs) {
    throw new ConfigError(
      `heartbeat timeoutMs ${hb.timeoutMs} must be at least 2 x intervalMs (2 x ${hb.intervalMs} = ${2 * hb.intervalMs})`,
      { hint: "raise timeoutMs or lower intervalMs, e.g. .heartbeat({ intervalMs: 1000, timeoutMs: 10000 })" },
    );
  }
  // Launchers that hand each worker the token themselves (ssh on its stdin, Slurm in the job environment) make one like local clusters do.
  const handsToken =
    spec.workers.kind === "join" && (spec.workers.launcher?.kind === "ssh" || spec.workers.launcher?.kind === "slurm");
  if (spec.workers.kind !== "local" && !handsToken && spec.token === undefined) {
    throw new ConfigError(
      `${spec.workers.kind === "join" ? (spec.workers.launcher?.kind === "spmd" ? "fromEnv()" : "join()") : "connect()"} to ${workerCount(spec)} worker(s) started elsewhere needs the cluster token: every connection proves it`,
      {
        hint: "add .token(secret) with the token the workers get, or set MESHTRAIN_TOKEN (for fromEnv(), on every rank)",
      },
    );
  }
  if (spec.workers.kind === "remote") {
    const seen = new Set<string>();
    for (const url of spec.workers.urls) {
      const key = url.replace(/\/$/, "");
      if (seen.has(key)) {
        throw new ConfigError(`connect() lists ${key} twice: each worker has one rank`, {
          hint: "list every worker once, in rank order",
        });
      }
      seen.add(key);
    }
  }
  if (spec.tls) {
    const urls = [
      ...(spec.workers.kind === "remote" ? spec.workers.urls : []),
      ...(spec.servers?.kind === "remote" ? spec.servers.urls : []),
    ];
    if (spec.workers.kind !== "remote" || spec.servers?.kind === "local") {
      throw new ConfigError(
        "tls() is for workers reached with connect() that were started with --tls-cert and --tls-key; local workers talk over loopback and joining workers over plain ws://, neither with a certificate",
        {
          hint: 'use .connect(["wss://host:7070", ...]).tls({ ca }), or drop .tls() for local workers',
        },
      );
    }
    const plain = urls.filter((u) => u.startsWith("ws://"));
    if (plain.length > 0) {
      throw new ConfigError(
        `tls() asks for encrypted links, but ${plain.join(", ")} ${plain.length === 1 ? "is" : "are"} plain ws://`,
        { hint: "use wss:// addresses for workers started with --tls-cert" },
      );
    }
  }
}

/** Parameter servers reachable by the workers (whether the strategy takes them, the strategy says). */
function checkServers(spec: ClusterSpec): void {
  if (spec.servers?.kind === "local" && spec.workers.kind !== "local") {
    throw new ConfigError(
      `.ps(${spec.servers.count}) starts parameter servers on this machine, which remote workers cannot reach (they listen on 127.0.0.1)`,
      {
        hint: 'start servers with `meshtrain worker --host <address>` where the workers can reach them and pass their addresses: .ps(["ws://host:7070", ...])',
      },
    );
  }
  if (spec.servers?.kind === "remote" && spec.token === undefined) {
    throw new ConfigError("remote parameter servers need the cluster token", {
      hint: "add .token(secret) with the token the servers were started with",
    });
  }
}

/** Stragglers made on purpose and wire limits. */
function checkExtras(spec: ClusterSpec): void {
  const n = workerCount(spec);
  for (const key of Object.keys(spec.slowdown ?? {})) {
    if (Number(key) >= n) {
      throw new ConfigError(`slowdown(${key}, ...) names rank ${key}, but the cluster has ranks 0 to ${n - 1}`, {
        hint: `choose a rank below ${n}`,
      });
    }
  }
  if (spec.spares !== undefined && spec.workers.kind !== "local") {
    throw new ConfigError(
      `spares(${spec.spares}) starts local workers beside local ones; this cluster's workers run elsewhere`,
      {
        hint: "start spare workers on their hosts and add one with cluster.add(url) when a worker is lost, or, under join(), use elastic: { replace: true }, which takes the next worker that joins",
      },
    );
  }
  if (spec.modules?.length && spec.workers.kind !== "local") {
    throw new ConfigError(
      "modules() makes local workers import files at start; workers started elsewhere import their own",
      {
        hint: `drop .modules() and start each remote worker with meshtrain worker --module <file> (${spec.modules.join(", ")}), the file on that machine`,
      },
    );
  }
  if (spec.tls && spec.dataPlane === "native") {
    throw new ConfigError("the native data plane does not encrypt, and this cluster uses TLS", {
      hint: 'drop .dataPlane("native"): with .tls() the all-reduce stays on the encrypted WebSocket links',
    });
  }
  const chunkBytes = spec.chunkElements * 4 + 32;
  if (chunkBytes > spec.maxFrameBytes) {
    throw new ConfigError(
      `chunkElements ${spec.chunkElements} makes frames of ${chunkBytes} bytes, above maxFrameBytes ${spec.maxFrameBytes}`,
      { hint: "lower chunkElements or raise maxFrameBytes" },
    );
  }
}
