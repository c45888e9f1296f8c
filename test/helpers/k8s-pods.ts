import * as fs from "node:fs";
import * as path from "node:path";
import { parseAllDocuments } from "yaml";

/** The parts of the manifests a pod's process sees. */
interface Container {
  command: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }>;
  volumeMounts: Array<{ name: string; mountPath: string }>;
  resources: { requests: { memory: string; cpu: string }; limits: { memory: string } };
}

type Volume = { name: string; secret?: { secretName: string }; configMap?: { name: string }; emptyDir?: object };

export interface Manifest {
  kind: string;
  metadata: { name: string };
  spec?: { completions?: number; template?: { spec: { containers: Container[]; initContainers?: Container[]; volumes: Volume[] } } };
  stringData?: Record<string, string>;
  binaryData?: Record<string, string>;
}

/** A pod as a local process: its init containers' argv (run first, in order), its argv and environment, and what it asked Kubernetes for. */
export interface LocalPod {
  init: string[][];
  argv: string[];
  env: Record<string, string>;
  memoryRequestBytes: number;
}

export function parseManifests(text: string): Manifest[] {
  return parseAllDocuments(text).map((d) => d.toJS() as Manifest);
}

function bytesOf(quantity: string): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!m) throw new Error(`unexpected quantity ${quantity}`);
  return Number(m[1]) * 2 ** (m[2] === "Gi" ? 30 : 20);
}

/**
 * The driver pod and the worker pods (one per completion index) as the kubelet would run them,
 * here: each pod's volumes as folders under `dir` (a Secret's keys and a ConfigMap's binaryData
 * written as files, an emptyDir empty; mounted paths in the command lines point there),
 * secretKeyRef variables filled in, JOB_COMPLETION_INDEX set for each index as the Job
 * controller sets it. The command lines keep the driver Service's name: the test makes it
 * resolve (to 127.0.0.1) once the driver runs, as a headless Service resolves to its pod.
 */
export function localPods(objects: readonly Manifest[], dir: string): { service: string; driver: LocalPod; workers: LocalPod[] } {
  const secrets = new Map(objects.filter((o) => o.kind === "Secret").map((o) => [o.metadata.name, o.stringData ?? {}]));
  const maps = new Map(objects.filter((o) => o.kind === "ConfigMap").map((o) => [o.metadata.name, o.binaryData ?? {}]));
  const service = objects.find((o) => o.kind === "Service")!.metadata.name;
  const jobs = objects.filter((o) => o.kind === "Job");
  const pod = (job: Manifest, index: number, extra: Record<string, string>): LocalPod => {
    const spec = job.spec!.template!.spec;
    const folders = new Map(
      spec.volumes.map((v) => {
        const local = path.join(dir, `${job.metadata.name}-${index}-${v.name}`);
        fs.mkdirSync(local, { recursive: true });
        for (const [key, value] of Object.entries(v.secret ? secrets.get(v.secret.secretName)! : {})) fs.writeFileSync(path.join(local, key), value, { mode: 0o600 });
        for (const [key, value] of Object.entries(v.configMap ? maps.get(v.configMap.name)! : {})) fs.writeFileSync(path.join(local, key), Buffer.from(value, "base64"));
        return [v.name, local];
      }),
    );
    const argvOf = (c: Container): string[] => {
      const mounts = c.volumeMounts.map((m) => ({ from: m.mountPath, to: folders.get(m.name)! }));
      return c.command.map((a) => mounts.reduce((s, m) => s.split(m.from).join(m.to), a));
    };
    const c = spec.containers[0]!;
    const env: Record<string, string> = { ...extra };
    for (const e of c.env ?? []) env[e.name] = e.value ?? secrets.get(e.valueFrom!.secretKeyRef.name)![e.valueFrom!.secretKeyRef.key]!;
    return { init: (spec.initContainers ?? []).map(argvOf), argv: argvOf(c), env, memoryRequestBytes: bytesOf(c.resources.requests.memory) };
  };
  const driverJob = jobs.find((j) => j.metadata.name === service)!;
  const workerJob = jobs.find((j) => j !== driverJob)!;
  return {
    service,
    driver: pod(driverJob, 0, {}),
    workers: Array.from({ length: workerJob.spec!.completions! }, (_, i) => pod(workerJob, i, { JOB_COMPLETION_INDEX: String(i) })),
  };
}
