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

export interface Manifest {
  kind: string;
  metadata: { name: string };
  spec?: { completions?: number; template?: { spec: { containers: Container[]; volumes: Array<{ name: string; secret: { secretName: string } }> } } };
  stringData?: Record<string, string>;
}

/** A pod as a local process: its argv and environment, and what it asked Kubernetes for. */
export interface LocalPod {
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
 * here: each Secret volume written to a folder under `dir` (mounted paths in the command line
 * point there), secretKeyRef variables filled in, JOB_COMPLETION_INDEX set for each index as the
 * Job controller sets it. The command lines keep the driver Service's name: the test makes it
 * resolve (to 127.0.0.1) once the driver runs, as a headless Service resolves to its pod.
 */
export function localPods(objects: readonly Manifest[], dir: string): { service: string; driver: LocalPod; workers: LocalPod[] } {
  const secrets = new Map(objects.filter((o) => o.kind === "Secret").map((o) => [o.metadata.name, o.stringData ?? {}]));
  const service = objects.find((o) => o.kind === "Service")!.metadata.name;
  const jobs = objects.filter((o) => o.kind === "Job");
  const pod = (job: Manifest, extra: Record<string, string>): LocalPod => {
    const spec = job.spec!.template!.spec;
    const c = spec.containers[0]!;
    const mounts = c.volumeMounts.map((m) => {
      const secret = secrets.get(spec.volumes.find((v) => v.name === m.name)!.secret.secretName)!;
      const local = path.join(dir, `${job.metadata.name}-${m.name}`);
      fs.mkdirSync(local, { recursive: true });
      for (const [key, value] of Object.entries(secret)) fs.writeFileSync(path.join(local, key), value, { mode: 0o600 });
      return { from: m.mountPath, to: local };
    });
    const argv = c.command.map((a) => mounts.reduce((s, m) => s.split(m.from).join(m.to), a));
    const env: Record<string, string> = { ...extra };
    for (const e of c.env ?? []) env[e.name] = e.value ?? secrets.get(e.valueFrom!.secretKeyRef.name)![e.valueFrom!.secretKeyRef.key]!;
    return { argv, env, memoryRequestBytes: bytesOf(c.resources.requests.memory) };
  };
  const driverJob = jobs.find((j) => j.metadata.name === service)!;
  const workerJob = jobs.find((j) => j !== driverJob)!;
  return {
    service,
    driver: pod(driverJob, {}),
    workers: Array.from({ length: workerJob.spec!.completions! }, (_, i) => pod(workerJob, { JOB_COMPLETION_INDEX: String(i) })),
  };
}
