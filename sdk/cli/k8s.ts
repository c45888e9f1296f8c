import type { OptimizerSpec } from "../protocol/optimizer-spec";
import * as fs from "node:fs";
import type * as tf from "@tensorflow/tfjs";
import { stringify } from "yaml";
import { cluster } from "../cluster/builder";
import { newToken } from "../transport/auth";
import { VERSION } from "../protocol/sdk-version";
import {
  k8sManifests,
  runProblems,
  type K8sRun,
  type KubeObject,
  type ShippedBundle,
} from "../launchers/k8s-manifests";
import { localBundle } from "../launchers/bundle-ship";
import { DEFAULT_BUNDLE_BACKENDS, type BundleBackend } from "../config/bundle-backends";
import { throwProblems, type OptionProblem } from "../launchers/option-problems";
import { podMemory, quantityProblem } from "../launchers/k8s-resources";
import { ConfigError } from "../errors/errors";
import type { MemoryEstimate } from "../plan/memory";
import { isDemoModel, modelFromArg } from "./models";
import { readToken } from "./join-options";

export interface K8sCliOptions {
  workers: number;
  image: string;
  name: string;
  namespace?: string;
  port: number;
  /** A demo model's name, or a model.json to size the pods for. */
  model: string;
  batchSize: number;
  optimizer: OptimizerSpec["name"];
  cpu: string;
  memory?: string;
  driverMemory?: string;
  meshtrain: string;
  driverCommand?: string;
  tokenFile?: string;
  out?: string;
  /** The worker bundle in ConfigMaps, unpacked by an init container: the workers' image needs only Node. */
  ship?: boolean;
  /** The workers' image (default: --image); with --ship any image with Node 20, sh and tar. */
  workerImage?: string;
  /** What the shipped bundle's workers compute with (default native, wasm). */
  shipBackends?: BundleBackend[];
}

/** A ConfigMap holds at most 1 MiB; a part of 700 KiB is 933 KiB as base64, with room for its metadata. */
const PART_BYTES = 700 * 1024;

/** This installation's worker bundle (launchers' cache) as the parts the manifests carry. */
function shippedBundle(backends: readonly BundleBackend[]): ShippedBundle {
  const b = localBundle(backends);
  const bytes = fs.readFileSync(b.file);
  const parts: string[] = [];
  for (let at = 0; at < bytes.length; at += PART_BYTES)
    parts.push(bytes.subarray(at, at + PART_BYTES).toString("base64"));
  return { key: b.key, parts };
}

function words(line: string): string[] {
  return line
    .trim()
    .split(/\s+/)
    .filter((w) => w !== "");
}

/** A data-parallel replica's memory estimate on `workers` workers (the plan splits the batch). */
function replicaMemory(model: tf.LayersModel, workers: number, token: string, o: K8sCliOptions): MemoryEstimate {
  const plan = cluster()
    .join({ workers })
    .token(token)
    .strategy("data")
    .plan(model, { batchSize: o.batchSize, optimizer: o.optimizer });
  if (!("memory" in plan)) throw new Error(`a data-parallel cluster planned stages ("${plan.strategy}")`);
  return plan.memory;
}

/** The run `meshtrain k8s` describes: the plan's memory estimate sizes the pods. */
export async function k8sRun(o: K8sCliOptions): Promise<K8sRun> {
  if (!isDemoModel(o.model) && o.driverCommand === undefined) {
    throw new ConfigError(`--model ${o.model} sizes the pods, but the default driver trains a demo model`, {
      hint: 'add --driver-command "node train.js" (your script, in the image) to run your model',
    });
  }
  throwProblems(
    [
      ...runProblems(o),
      quantityProblem("--cpu", o.cpu, "cpu"),
      ...(
        [
          ["--memory", o.memory],
          ["--driver-memory", o.driverMemory],
        ] as const
      ).map(([flag, v]) => (v === undefined ? null : quantityProblem(flag, v, "memory"))),
    ].filter((p): p is OptionProblem => p !== null),
  );
  const token = (o.tokenFile !== undefined ? readToken({ tokenFile: o.tokenFile }) : undefined) ?? newToken();
  const model = await modelFromArg(o.model);
  const perWorker = replicaMemory(model, o.workers, token, o);
  // The driver holds the whole model and, in the demo, evaluates with it; its dataset is on top.
  const driver = replicaMemory(model, 1, token, o);
  model.dispose();
  const meshtrain = words(o.meshtrain);
  const demo = [
    ...meshtrain,
    "demo",
    "--workers",
    String(o.workers),
    "--join-port",
    String(o.port),
    "--host",
    "0.0.0.0",
    "--model",
    o.model,
    "--batch-size",
    String(o.batchSize),
  ];
  return {
    name: o.name,
    ...(o.namespace !== undefined ? { namespace: o.namespace } : {}),
    image: o.image,
    workers: o.workers,
    port: o.port,
    token,
    meshtrain,
    driverCommand: o.driverCommand !== undefined ? words(o.driverCommand) : demo,
    cpu: o.cpu,
    memory: podMemory(perWorker, o.memory, "per worker"),
    driverMemory: podMemory(driver, o.driverMemory, "for the driver"),
    workerImage: o.workerImage ?? o.image,
    ...(o.ship ? { bundle: shippedBundle(o.shipBackends ?? DEFAULT_BUNDLE_BACKENDS) } : {}),
  };
}

/** The manifests as one YAML stream, with a header saying how to apply them. */
export function manifestsYaml(objects: readonly KubeObject[], r: K8sRun): string {
  const header = [
    `# meshtrain ${VERSION}: ${r.workers} worker(s) joining the driver ${r.name}-driver:${r.port}, image ${r.image}`,
    ...(r.bundle
      ? [
          `# the worker bundle ${r.bundle.key} in ${r.bundle.parts.length} ConfigMap(s): worker pods (image ${r.workerImage}) need only Node 20, sh and tar`,
        ]
      : []),
    "# holds a fresh cluster token in a Secret: keep this file private.",
    "# apply: kubectl apply -f <this file>; follow: kubectl logs -f job/" + `${r.name}-driver`,
  ];
  return `${header.join("\n")}\n${objects.map((o) => stringify(o, { lineWidth: 0 })).join("---\n")}`;
}

/** `meshtrain k8s`: writes the manifests (to --out, else stdout) and says what to do next on stderr. */
export async function writeK8s(o: K8sCliOptions): Promise<void> {
  const r = await k8sRun(o);
  const text = manifestsYaml(k8sManifests(r), r);
  if (o.out === undefined) process.stdout.write(text);
  else fs.writeFileSync(o.out, text, { mode: 0o600 });
  const target = o.out ?? "-";
  process.stderr.write(
    [
      `meshtrain k8s: a Secret, a headless Service, the driver Job and an Indexed Job of ${r.workers} worker(s)${r.bundle ? `, and the worker bundle in ${r.bundle.parts.length} ConfigMap(s)` : ""}${o.out !== undefined ? ` in ${o.out}` : ""}`,
      `  worker pods: ${r.memory.reason}; cpu ${r.cpu}${r.bundle ? `; image ${r.workerImage}, which needs only Node 20, sh and tar (an init container unpacks the bundle)` : ""}`,
      `  driver pod: ${r.driverMemory.reason}`,
      `  run:    kubectl apply -f ${target}`,
      `  watch:  kubectl logs -f job/${r.name}-driver`,
      `  remove: kubectl delete job,service,secret${r.bundle ? ",configmap" : ""} -l app.kubernetes.io/instance=${r.name}`,
      "",
    ].join("\n"),
  );
}
