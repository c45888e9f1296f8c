#!/usr/bin/env node
import { OPTIMIZER_NAMES } from "../protocol/optimizer-spec";
import * as fs from "node:fs";
import { Command, InvalidArgumentError, Option } from "commander";
import { ConfigError, isMeshtrainError } from "../errors/errors";
import { BACKEND_CHOICES } from "../protocol/backend-names";
import { VERSION } from "../protocol/sdk-version";
import { DEFAULT_WORKER_OPTIONS } from "../worker/options";
import type { DemoOptions } from "./demo";
import { joinTarget, readToken } from "./join-options";
import { exitWhenStdinCloses, tokenFromStdin } from "./stdin-token";
import type { K8sCliOptions } from "./k8s";
import { quietCpuBanner } from "../backends/quiet-banner";
import { DEMO_MODELS, KERNEL_NAME, type DemoModel } from "./names";

// Each command loads its own code when it runs: `meshtrain worker` loads the worker's, never the driver's.
const worker = (): typeof import("../worker/main") => require("../worker/main");
const driver = (): typeof import("../cluster/builder") => require("../cluster/builder");
const demo = (): typeof import("./demo") => require("./demo");
const models = (): typeof import("./models") => require("./models");
const k8s = (): typeof import("./k8s") => require("./k8s");
const jupyter = (): typeof import("./jupyter") => require("./jupyter");

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

function int(min: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min)
      throw new InvalidArgumentError(`expected a whole number >= ${min}, got "${v}"`);
    return n;
  };
}

function positive(v: string): number {
  const n = Number(v);
  if (!(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError(`expected a positive number, got "${v}"`);
  return n;
}

quietCpuBanner();

const program = new Command()
  .name("meshtrain")
  .description("Train TensorFlow.js models on many workers at once.")
  .version(VERSION);

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

program
  .command("worker")
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

program
  .command("devices")
  .description(
    "the GPUs and backends this machine offers workers: CUDA devices, the Vulkan loader and drivers, and the WebGPU adapters Dawn finds",
  )
  .action(async () => {
    process.stdout.write(
      `${await (require("../backends/devices-report") as typeof import("../backends/devices-report")).describeDevices()}\n`,
    );
  });

program
  .command("preflight")
  .description(
    "what a launcher checks on a host before starting workers there: this meshtrain's and node's versions, and whether the driver's address is reachable (one JSON line)",
  )
  .requiredOption("--reach <address>", "the driver's join address, ws://host:port")
  .action(async (o: { reach: string }) => {
    process.stdout.write(
      `${JSON.stringify(await (require("./preflight") as typeof import("./preflight")).runPreflight(o.reach))}\n`,
    );
  });

program
  .command("env")
  .description(
    "print the rank and world size this process's environment gives (TF_CONFIG, torchrun, Slurm, Kubernetes, Open MPI)",
  )
  .action(() => {
    const env = require("../config/rank-env") as typeof import("../config/rank-env");
    process.stdout.write(`${env.describeRankEnv(env.detectRankEnv())}\n`);
  });

interface DemoCliOptions extends Omit<DemoOptions, "join"> {
  joinPort?: number;
  host: string;
  tokenFile?: string;
  joinTimeout: number;
}

/** --join-port's listener, with the token it needs (checked now, before MNIST loads). */
function demoJoin(o: DemoCliOptions): Pick<DemoOptions, "join"> {
  if (o.joinPort === undefined) return {};
  const token = readToken({ tokenFile: o.tokenFile });
  if (token === undefined)
    throw new ConfigError("demo --join-port needs the cluster token the workers were given", {
      hint: "pass --token-file <file> or set MESHTRAIN_TOKEN",
    });
  return { join: { host: o.host, port: o.joinPort, token, timeoutMs: o.joinTimeout * 1000 } };
}

program
  .command("demo")
  .description("train a model on MNIST with a local cluster of CPU workers, then test it on held-out digits")
  .option("--workers <n>", "local worker processes", int(1), 2)
  .option("--epochs <n>", "passes over the training digits", int(1), 3)
  .option("--batch-size <n>", "global batch (split evenly among workers)", int(1), 64)
  .option("--learning-rate <lr>", "Adam's learning rate", positive, 0.001)
  .addOption(new Option("--backend <name>", "TF.js backend on the workers").choices(BACKEND_CHOICES).default("auto"))
  .addOption(new Option("--model <name>", "model to train").choices(DEMO_MODELS).default("cnn"))
  .option(
    "--join-port <port>",
    "wait for --workers workers to join on this port (meshtrain worker --join) instead of starting them, as the driver pod `meshtrain k8s` writes does; the token from --token-file or MESHTRAIN_TOKEN",
    int(0),
  )
  .option("--host <address>", "with --join-port: the interface to listen on (0.0.0.0 for other machines)", "127.0.0.1")
  .option("--token-file <file>", "with --join-port: read the cluster token from this file")
  .option("--join-timeout <seconds>", "with --join-port: how long to wait for the workers", int(1), 600)
  .action(async (o: DemoCliOptions) => {
    const result = await demo().runDemo({ ...o, ...demoJoin(o) });
    process.exit(result.accuracy >= 0.9 ? 0 : 1);
  });

program
  .command("plan")
  .description("print the plan a strategy makes for a demo model (starts nothing)")
  .option("--workers <n>", "number of workers", int(1), 2)
  .option("--batch-size <n>", "global batch", int(1), 64)
  .addOption(new Option("--model <name>", "model").choices(DEMO_MODELS).default("cnn"))
  .action((o: { workers: number; batchSize: number; model: DemoModel }) => {
    const plan = driver()
      .cluster()
      .workers(o.workers)
      .strategy("data")
      .plan(models().buildDemoModel(o.model), { batchSize: o.batchSize });
    process.stdout.write(`${String(plan)}\n`);
  });

program
  .command("k8s")
  .description(
    "write Kubernetes manifests for a run inside a cluster: a Secret with a fresh token, a headless Service for the driver, the driver Job, and an Indexed Job of workers that join it; pods sized by the plan's memory estimate",
  )
  .requiredOption("--workers <n>", "worker pods", int(1))
  .requiredOption("--image <image>", "a container image with node >= 20 and meshtrain installed")
  .option("--name <name>", "prefix of every object's name", "meshtrain")
  .option("--namespace <namespace>", "the objects' namespace (default: the one kubectl apply uses)")
  .option("--port <port>", "the driver's join port", int(1), 7071)
  .option(
    "--model <name|model.json>",
    `the model the plan sizes the pods for: a demo model (${DEMO_MODELS.join(", ")}), which the default driver trains, or your model's model.json (with --driver-command)`,
    "cnn",
  )
  .option("--batch-size <n>", "global batch, for the demo and the memory estimate", int(1), 64)
  .addOption(
    new Option("--optimizer <name>", "for the memory estimate's optimizer state")
      .choices([...OPTIMIZER_NAMES])
      .default("adam"),
  )
  .option("--cpu <cores>", "cores each pod requests", "1")
  .option("--memory <quantity>", "each worker pod's memory, e.g. 2Gi (default: from the plan's estimate)")
  .option("--driver-memory <quantity>", "the driver pod's memory (default: from the plan's estimate)")
  .option("--meshtrain <command>", "how the image runs meshtrain", "meshtrain")
  .option(
    "--driver-command <command>",
    'the driver container\'s command, e.g. "node train.js" (default: meshtrain demo waiting for the workers); it gets MESHTRAIN_WORKERS, MESHTRAIN_PORT and MESHTRAIN_TOKEN',
  )
  .option("--token-file <file>", "put this token in the Secret instead of a fresh one")
  .option("--out <file>", "write the manifests here (mode 0600) instead of stdout")
  .action(async (o: K8sCliOptions) => {
    await k8s().writeK8s(o);
  });

const kernel = program.command("kernel").description("the Jupyter kernel for notebooks that use meshtrain");
kernel
  .command("install")
  .description(
    "register the kernel with Jupyter (for this user, or under --prefix); notebooks in any folder can then import meshtrain",
  )
  .option("--name <name>", "the kernel's name in Jupyter", KERNEL_NAME)
  .option(
    "--prefix <dir>",
    "install under <dir>/share/jupyter (a virtualenv or conda prefix) instead of the user's Jupyter folder",
  )
  .action((o: { name: string; prefix?: string }) => {
    const dir = jupyter().installKernel(o);
    process.stdout.write(
      `installed the Jupyter kernel "${o.name}" in ${dir}\npick "TypeScript (meshtrain)" in Jupyter; remove it with: jupyter kernelspec uninstall ${o.name}\n`,
    );
  });

program
  .command("export")
  .description("write a notebook as one HTML file, with its placement diagrams and Plotly figures drawn")
  .argument("<notebook>", "the .ipynb file")
  .option("--out <file>", "the HTML file (default: the notebook's name with .html)")
  .option(
    "--execute",
    "run the notebook first, on the meshtrain kernel, and write the executed notebook beside the page (NAME.nbconvert.ipynb)",
    false,
  )
  .option("--kernel <name>", "the kernel to run it on", KERNEL_NAME)
  .option("--timeout <seconds>", "the longest a cell may run (with --execute)", int(1), 600)
  .action((notebook: string, o: { out?: string; execute: boolean; kernel: string; timeout: number }) => {
    const done = jupyter().exportNotebook(notebook, { ...o, timeoutSeconds: o.timeout });
    process.stdout.write(`${done.file}\n${done.executed ? `${done.executed}\n` : ""}`);
    if (done.cellFailed) {
      process.stderr.write(
        `meshtrain: a cell of ${notebook} failed or did not run (its error is above; tag a cell raises-exception when failing is what it shows); ${done.file} shows every output up to it\n`,
      );
      process.exitCode = 1;
    }
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(
    `meshtrain: ${isMeshtrainError(err) ? `${err.message} [${err.code}]` : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(isMeshtrainError(err) ? 2 : 1);
});
