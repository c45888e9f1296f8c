#!/usr/bin/env node
import { OPTIMIZER_NAMES } from "../protocol/optimizer-spec";
import { runProgram } from "./run-program";
import { Command, Option } from "commander";
import { int, listOf, positive } from "./arg-parsers";
import { BUNDLE_BACKENDS, DEFAULT_BUNDLE_BACKENDS, type BundleBackend } from "../config/bundle-backends";
import { hostCommands, workerCommand } from "./worker-command";
import { ConfigError } from "../errors/errors";
import { BACKEND_CHOICES } from "../protocol/backend-names";
import { VERSION } from "../protocol/sdk-version";
import type { DemoOptions } from "./demo";
import { readToken } from "./join-options";
import type { K8sCliOptions } from "./k8s";
import { quietCpuBanner } from "../backends/quiet-banner";
import { DEMO_MODELS, KERNEL_NAME, type DemoModel } from "./names";

// Each command loads its own code when it runs: `meshtrain worker` loads the worker's, never the driver's.
const driver = (): typeof import("../cluster/builder") => require("../cluster/builder");
const demo = (): typeof import("./demo") => require("./demo");
const models = (): typeof import("./models") => require("./models");
const k8s = (): typeof import("./k8s") => require("./k8s");
const jupyter = (): typeof import("./jupyter") => require("./jupyter");

quietCpuBanner();

const program = new Command()
  .name("meshtrain")
  .description("Train TensorFlow.js models on many workers at once.")
  .version(VERSION);

workerCommand(program.command("worker"));
hostCommands(program);

program
  .command("bundle")
  .description(
    "the worker side alone as one .tar.gz, for hosts that have only Node: extract it anywhere and run node meshtrain-worker-VERSION/meshtrain-worker.js with meshtrain worker's flags",
  )
  .option("--out <file>", "the .tar.gz to write (default: meshtrain-worker-VERSION-PLATFORM.tar.gz here)")
  .option("--platform <name>", "the platform its native addon is built for: this machine's (e.g. linux-x64)")
  .option(
    "--with-node",
    "put Node itself inside (from the npm registry), for hosts that have no Node: run ./meshtrain-worker there",
    false,
  )
  .option(
    "--backends <list>",
    "what its workers compute with, of native, wasm and webgpu (Dawn, 21 MiB: GPU workers)",
    listOf(BUNDLE_BACKENDS),
    [...DEFAULT_BUNDLE_BACKENDS],
  )
  .option("--no-bench", "leave out bench:gpu (node meshtrain-worker.js bench), 3.5 MiB of the .tar.gz")
  .option("--list", "list what is inside and why", false)
  .action(
    (o: {
      out?: string;
      platform?: string;
      withNode: boolean;
      list: boolean;
      backends: BundleBackend[];
      bench: boolean;
    }) => {
      const b = (require("../launchers/worker-bundle") as typeof import("../launchers/worker-bundle")).makeBundle(o);
      process.stdout.write(`${(require("./bundle") as typeof import("./bundle")).bundleReport(b, o.list)}\n`);
    },
  );

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
  .option(
    "--ship",
    "the worker bundle in ConfigMaps, unpacked by an init container: the workers' image needs only Node 20, sh and tar",
    false,
  )
  .option(
    "--worker-image <image>",
    "the worker pods' image (default: --image); with --ship, e.g. node:20-bookworm-slim",
  )
  .option(
    "--ship-backends <list>",
    "with --ship: what the bundle's workers compute with, of native, wasm and webgpu",
    listOf(BUNDLE_BACKENDS),
    [...DEFAULT_BUNDLE_BACKENDS],
  )
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

runProgram(program, "meshtrain");
