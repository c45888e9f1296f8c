import * as fs from "node:fs";
import { type Command, Option } from "commander";
import { ConfigError } from "../errors/errors";
import { BACKEND_CHOICES } from "../protocol/backend-names";
import { DEFAULT_WORKER_OPTIONS } from "../worker/options";
import { int } from "./arg-parsers";
import { joinTarget, readToken } from "./join-options";
import { exitWhenStdinCloses, tokenFromStdin } from "./stdin-token";

// The worker's code loads when the command runs: `meshtrain --help` loads none of it.
const worker = (): typeof import("../worker/main") => require("../worker/main");

interface WorkerCliOptions {
  host: string;
  port: number;
  token?: string;
  tokenFile?: string;
  maxFrameBytes: number;
  tlsCert?: string;
  tlsKey?: string;
  module: string[];
  join?: string;
  rank?: number;
  joinTimeout: number;
  tokenStdin?: boolean;
  gpu?: number;
  software?: boolean;
  backend?: string;
}

/** The certificate and key files, read now so that a wrong path fails before anything listens. */
function readTls(cert: string | undefined, key: string | undefined): { tls?: { cert: Buffer; key: Buffer } } {
  if (cert === undefined && key === undefined) return {};
  if (cert === undefined || key === undefined) {
    throw new ConfigError(
      `--tls-cert and --tls-key go together (got only ${cert === undefined ? "--tls-key" : "--tls-cert"})`,
      { hint: "pass both, e.g. --tls-cert cert.pem --tls-key key.pem" },
    );
  }
  const read = (file: string, what: string): Buffer => {
    try {
      return fs.readFileSync(file);
    } catch (err) {
      throw new ConfigError(
        `cannot read the TLS ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
        { hint: "give the path of a PEM file this user can read" },
      );
    }
  };
  return { tls: { cert: read(cert, "certificate"), key: read(key, "key") } };
}

/**
 * The worker's flags and action on `command`: `meshtrain worker`'s, and the worker bundle's own
 * program (`node meshtrain-worker.js` takes the same flags).
 */
// long: one commander chain, a flag a line.
export function workerCommand(command: Command): Command {
  return command
    .description("serve as a worker for drivers that know the token")
    .option(
      "--host <address>",
      "interface to bind (use 0.0.0.0 for other machines; needs a token)",
      DEFAULT_WORKER_OPTIONS.host,
    )
    .option("--port <port>", "port to listen on (0 picks a free one)", int(0), DEFAULT_WORKER_OPTIONS.port)
    .option("--token <secret>", "cluster token (or set MESHTRAIN_TOKEN, which keeps it out of `ps`)")
    .option(
      "--max-frame-bytes <bytes>",
      "largest WebSocket message accepted",
      int(65536),
      DEFAULT_WORKER_OPTIONS.maxFrameBytes,
    )
    .option("--tls-cert <file>", "serve wss:// with this PEM certificate (with --tls-key)")
    .option("--tls-key <file>", "the PEM private key of --tls-cert")
    .option(
      "--module <file>",
      "import this JavaScript file at start, e.g. one registering custom layers (repeatable)",
      (v: string, prev: string[]) => [...prev, v],
      [] as string[],
    )
    .option("--token-file <file>", "read the cluster token from this file")
    .option(
      "--token-stdin",
      "read the cluster token from the first line of stdin, and exit when stdin closes (how launchers start workers over ssh)",
    )
    .option(
      "--join <address>",
      "join the driver listening there (cluster().join()) and exit when it is gone; listens on the interface that reaches it, on a free port, unless --host/--port say otherwise",
    )
    .option(
      "--rank <n>",
      "with --join: this worker's rank (default: from TF_CONFIG, RANK, SLURM_PROCID, JOB_COMPLETION_INDEX or OMPI_COMM_WORLD_RANK, else the order of arrival)",
      int(0),
    )
    .option(
      "--join-timeout <seconds>",
      "with --join: how long to wait for the driver to answer and give a rank",
      int(1),
      600,
    )
    .option(
      "--gpu <k>",
      "compute on this machine's k-th GPU, as `meshtrain devices` numbers them (a CUDA GPU, else a WebGPU adapter)",
      int(0),
    )
    .option("--software", "with --gpu: count software adapters (CPU rasterisers) as GPUs")
    .addOption(
      new Option("--backend <name>", 'this worker\'s backend when the driver asks for "auto"').choices(BACKEND_CHOICES),
    )
    .action(async (o: WorkerCliOptions, cmd: Command) => {
      if (await (require("./worker-device") as typeof import("./worker-device")).restartedWithDevice(o)) return;
      const given = (name: string): boolean => cmd.getOptionValueSource(name) === "cli";
      if (o.join !== undefined && (o.tlsCert || o.tlsKey))
        throw new ConfigError(
          "--join with --tls-cert: joined workers talk plain ws:// (authenticated by the token) for now",
          {
            hint: 'drop --tls-cert/--tls-key, or start the worker without --join and reach it with connect(["wss://..."]).tls({ ca })',
          },
        );
      const joining =
        o.join === undefined
          ? undefined
          : await joinTarget({
              join: o.join,
              rank: o.rank,
              joinTimeout: o.joinTimeout,
              host: o.host,
              hostGiven: given("host"),
            });
      const token = o.tokenStdin ? await tokenFromStdin(30_000) : readToken(o);
      if (o.tokenStdin) exitWhenStdinCloses();
      const code = await worker().runWorker({
        modules: o.module,
        host: joining?.host ?? o.host,
        port: joining && !given("port") ? 0 : o.port,
        token,
        maxFrameBytes: o.maxFrameBytes,
        exitWithDriver: false,
        ...readTls(o.tlsCert, o.tlsKey),
        ...(joining ? { join: joining.target } : {}),
      });
      process.exit(code);
    });
}

/**
 * The commands a worker host answers besides `worker`, on `program`: `preflight` (what the ssh
 * launcher checks there) and `devices`. One definition for `meshtrain` and the worker bundle's
 * program, so that a launcher runs the same command lines with either.
 */
export function hostCommands(program: Command): void {
  program
    .command("preflight")
    .description(
      "what a launcher checks on a host before starting workers there: this meshtrain's and node's versions, and whether the driver's address is reachable (one JSON line)",
    )
    .requiredOption("--reach <address>", "the driver's join address, ws://host:port")
    .action(async (o: { reach: string }) => {
      const report = await (require("./preflight") as typeof import("./preflight")).runPreflight(o.reach);
      process.stdout.write(`${JSON.stringify(report)}\n`);
    });
  program
    .command("devices")
    .description(
      "the GPUs and backends this machine offers workers: CUDA devices, the Vulkan loader and drivers, the WebGPU adapters Dawn finds, and the CPU backends",
    )
    .action(async () => {
      const report = require("../backends/devices-report") as typeof import("../backends/devices-report");
      process.stdout.write(`${await report.describeDevices()}\n${await report.describeCpuBackends()}\n`);
    });
}
