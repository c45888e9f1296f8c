import { throwProblems, type OptionProblem } from "./option-problems";
import { VERSION } from "../protocol/sdk-version";
import type { PodMemory } from "./k8s-resources";

/** Where the token Secret is mounted in every pod; workers read it with --token-file. */
export const TOKEN_DIR = "/var/run/meshtrain";
export const TOKEN_KEY = "token";
/** With a shipped bundle: where the worker pod's init container unpacks it (an emptyDir), and where its parts are mounted. */
export const BUNDLE_DIR = "/opt/meshtrain";
const PARTS_DIR = "/var/run/meshtrain-bundle";

/**
 * The worker bundle shipped in the manifests (`meshtrain k8s --ship`): its .tar.gz in parts, in
 * order, each base64 in a ConfigMap of its own (a ConfigMap holds at most 1 MiB).
 */
export interface ShippedBundle {
  key: string;
  parts: readonly string[];
}

/** What `meshtrain k8s` puts into the manifests. */
export interface K8sRun {
  /** Prefix of every object's name (a DNS label: lowercase letters, digits and "-"). */
  name: string;
  /** Omitted: the objects take the namespace `kubectl apply -n` gives. */
  namespace?: string;
  image: string;
  workers: number;
  /** The driver's join port (the headless Service's). */
  port: number;
  token: string;
  /** How the image runs meshtrain, e.g. ["meshtrain"] or ["npx", "meshtrain"]. */
  meshtrain: readonly string[];
  /** The driver container's command line; it gets MESHTRAIN_WORKERS, MESHTRAIN_PORT and MESHTRAIN_TOKEN. */
  driverCommand: readonly string[];
  /** Cores each worker asks for (requests only: a CPU limit would throttle the native kernels' threads). */
  cpu: string;
  memory: PodMemory;
  driverMemory: PodMemory;
  /** The workers' image: the same as the driver's, or, with a shipped bundle, any with Node 20, sh and tar. */
  workerImage: string;
  /** The worker bundle, when the workers' image has no meshtrain. */
  bundle?: ShippedBundle;
}

/** One Kubernetes object as plain data, ready for YAML. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** Job pod names are `<job>-<index>-<random>` and label values stop at 63, so names stay short. */
const NAME = /^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$/;

/** What Kubernetes would reject in the run's names. */
export function runProblems(r: Pick<K8sRun, "name" | "namespace" | "image">): OptionProblem[] {
  const problems: OptionProblem[] = [];
  if (!NAME.test(r.name))
    problems.push({
      summary: `--name ${JSON.stringify(r.name)} is not a usable Kubernetes name`,
      hint: "use up to 40 lowercase letters, digits and '-', starting with a letter, e.g. mnist-run",
    });
  if (r.namespace !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(r.namespace))
    problems.push({
      summary: `--namespace ${JSON.stringify(r.namespace)} is not a namespace name`,
      hint: "lowercase letters, digits and '-', e.g. ml-team",
    });
  if (r.image.trim() === "" || /\s/.test(r.image))
    problems.push({
      summary: `--image ${JSON.stringify(r.image)} is not an image reference`,
      hint: "name an image with meshtrain installed, e.g. registry.example.com/team/meshtrain:0.1.0",
    });
  return problems;
}

/**
 * The objects for a run inside a Kubernetes cluster: a Secret with the token, a headless Service
 * that names the driver pod, the driver as a one-pod Job, and the workers as an Indexed Job whose
 * pods join the driver with their JOB_COMPLETION_INDEX as rank. Pure data; the CLI writes it.
 */
export function k8sManifests(r: K8sRun): KubeObject[] {
  throwProblems(runProblems(r));
  const secret = `${r.name}-token`;
  const driver = `${r.name}-driver`;
  const tokenMount = { name: "token", mountPath: TOKEN_DIR, readOnly: true };
  const resources = (m: PodMemory): Record<string, unknown> => ({
    requests: { cpu: r.cpu, memory: m.request },
    limits: { memory: m.limit },
  });
  return [
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: meta(r, secret),
      type: "Opaque",
      stringData: { [TOKEN_KEY]: r.token },
    },
    driverService(r, driver),
    job(r, driver, "driver", { completions: 1, parallelism: 1 }, r.driverMemory, {
      command: [...r.driverCommand],
      env: [
        { name: "MESHTRAIN_WORKERS", value: String(r.workers) },
        { name: "MESHTRAIN_PORT", value: String(r.port) },
        { name: "MESHTRAIN_TOKEN", valueFrom: { secretKeyRef: { name: secret, key: TOKEN_KEY } } },
      ],
      ports: [{ name: "join", containerPort: r.port, protocol: "TCP" }],
      resources: resources(r.driverMemory),
      volumeMounts: [tokenMount],
    }),
    ...(r.bundle ? r.bundle.parts.map((part, i) => bundlePart(r, i, part)) : []),
    job(
      r,
      `${r.name}-workers`,
      "worker",
      { completionMode: "Indexed", completions: r.workers, parallelism: r.workers },
      r.memory,
      {
        command: [
          ...workerProgram(r),
          "worker",
          "--join",
          `ws://${driver}:${r.port}`,
          "--token-file",
          `${TOKEN_DIR}/${TOKEN_KEY}`,
        ],
        resources: resources(r.memory),
        volumeMounts: [tokenMount, ...(r.bundle ? [{ name: "bundle", mountPath: BUNDLE_DIR }] : [])],
      },
    ),
  ];
}

/** How a worker pod runs meshtrain: the image's, or node on the bundle its init container unpacked. */
function workerProgram(r: K8sRun): string[] {
  return r.bundle ? ["node", `${BUNDLE_DIR}/meshtrain-worker-${VERSION}/meshtrain-worker.js`] : [...r.meshtrain];
}

function bundlePart(r: K8sRun, i: number, part: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: meta(r, `${r.name}-bundle-${i}`, "worker", { "meshtrain/bundle": r.bundle!.key }),
    binaryData: { part },
  };
}

/**
 * A worker pod's extra parts with a shipped bundle: each ConfigMap mounted, an emptyDir, and an
 * init container (the workers' image: sh, cat and tar) that joins the parts and unpacks them there.
 */
function unpacking(r: K8sRun): { initContainers: unknown[]; volumes: unknown[] } {
  const parts = r.bundle!.parts.map((_, i) => ({
    name: `bundle-${i}`,
    mountPath: `${PARTS_DIR}/${i}`,
    readOnly: true,
  }));
  return {
    initContainers: [
      {
        name: "unpack-bundle",
        image: r.workerImage,
        command: ["sh", "-c", `cat ${parts.map((p) => `${p.mountPath}/part`).join(" ")} | tar -xzf - -C ${BUNDLE_DIR}`],
        volumeMounts: [...parts, { name: "bundle", mountPath: BUNDLE_DIR }],
      },
    ],
    volumes: [
      { name: "bundle", emptyDir: {} },
      ...parts.map((p, i) => ({ name: p.name, configMap: { name: `${r.name}-bundle-${i}` } })),
    ],
  };
}

type Role = "driver" | "worker";

function driverService(r: K8sRun, driver: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(r, driver, "driver"),
    // Headless: the name resolves to the driver pod itself, before it is ready, so workers that
    // start first find it as soon as it runs (they retry dialing until their join timeout).
    spec: {
      clusterIP: "None",
      publishNotReadyAddresses: true,
      selector: { "app.kubernetes.io/instance": r.name, "meshtrain/role": "driver" },
      ports: [{ name: "join", port: r.port, targetPort: r.port, protocol: "TCP" }],
    },
  };
}

function labels(r: K8sRun, role?: Role): Record<string, string> {
  return {
    "app.kubernetes.io/name": "meshtrain",
    "app.kubernetes.io/instance": r.name,
    "app.kubernetes.io/version": VERSION,
    ...(role !== undefined ? { "meshtrain/role": role } : {}),
  };
}

function meta(r: K8sRun, name: string, role?: Role, annotations?: Record<string, string>): KubeObject["metadata"] {
  return {
    name,
    ...(r.namespace !== undefined ? { namespace: r.namespace } : {}),
    labels: labels(r, role),
    ...(annotations !== undefined ? { annotations } : {}),
  };
}

/** A Job of pods that run once: a lost pod fails the run rather than rejoining a run that has moved on. */
function job(
  r: K8sRun,
  name: string,
  role: Role,
  spec: Record<string, unknown>,
  m: PodMemory,
  container: Record<string, unknown>,
): KubeObject {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: meta(r, name, role, { "meshtrain/memory": m.reason }),
    spec: {
      ...spec,
      backoffLimit: 0,
      template: {
        metadata: { labels: labels(r, role) },
        spec: podSpec(r, role, container),
      },
    },
  };
}

function podSpec(r: K8sRun, role: Role, container: Record<string, unknown>): Record<string, unknown> {
  const shipped = role === "worker" && r.bundle ? unpacking(r) : null;
  return {
    restartPolicy: "Never",
    ...(shipped ? { initContainers: shipped.initContainers } : {}),
    containers: [{ name: role, image: role === "worker" ? r.workerImage : r.image, ...container }],
    volumes: [{ name: "token", secret: { secretName: `${r.name}-token` } }, ...(shipped ? shipped.volumes : [])],
  };
}
