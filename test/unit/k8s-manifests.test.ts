import assert from "node:assert/strict";
import { test } from "node:test";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { Job } from "kubernetes-models/batch/v1/Job";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { ConfigError } from "../../sdk/errors/errors";
import { k8sRun, manifestsYaml, type K8sCliOptions } from "../../sdk/cli/k8s";
import { BUNDLE_DIR, k8sManifests, type KubeObject } from "../../sdk/launchers/k8s-manifests";
import { VERSION } from "../../sdk/protocol/sdk-version";
import { podMemory, quantityProblem, RUNTIME_BYTES } from "../../sdk/launchers/k8s-resources";
import { kubeTypeErrors } from "../helpers/kube-types";
import { parseManifests } from "../helpers/k8s-pods";

const OPTIONS: K8sCliOptions = { workers: 4, image: "registry.example.com/ml/meshtrain:0.1.0", name: "mnist", port: 7071, model: "cnn", batchSize: 64, optimizer: "adam", cpu: "1", meshtrain: "meshtrain" };

async function objects(o: Partial<K8sCliOptions> = {}): Promise<KubeObject[]> {
  return k8sManifests(await k8sRun({ ...OPTIONS, ...o }));
}

/** kubernetes-models' validator for each kind (schemas generated from Kubernetes' OpenAPI). */
function validate(o: KubeObject): void {
  const model = o.kind === "Secret" ? new Secret(o as never) : o.kind === "Service" ? new Service(o as never) : o.kind === "Job" ? new Job(o as never) : o.kind === "ConfigMap" ? new ConfigMap(o as never) : undefined;
  assert.ok(model, `no validator for ${o.kind}`);
  model.validate();
}

/** The Job and its pod's container, by the job's name. */
function jobOf(objs: KubeObject[], name: string): { spec: Record<string, unknown>; pod: { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> }; container: Record<string, unknown> } {
  const job = objs.find((o) => o.kind === "Job" && o.metadata.name === name);
  assert.ok(job, `no Job ${name}`);
  const spec = job.spec as Record<string, unknown> & { template: { metadata: { labels: Record<string, string> }; spec: { containers: Array<Record<string, unknown>> } } };
  return { spec, pod: spec.template, container: spec.template.spec.containers[0]! };
}

test("meshtrain k8s: every object passes the Kubernetes OpenAPI validator, and type-checks against its types with no unknown field", async () => {
  for (const o of [await objects(), await objects({ namespace: "ml-team", memory: "2Gi", driverCommand: "node train.js" })]) {
    assert.deepEqual(o.map((x) => x.kind), ["Secret", "Service", "Job", "Job"]);
    for (const x of o) validate(x);
    assert.deepEqual(kubeTypeErrors(o), []);
  }
});

test("the checks can fail: a misspelled field, a wrong type and a value outside an enum are each caught", async () => {
  const o = await objects();
  const job = structuredClone(o[3]!) as KubeObject & { spec: Record<string, unknown> };
  const misspelled = { ...job, spec: { ...job.spec, completionsMode: "Indexed" } };
  assert.match(kubeTypeErrors([misspelled]).join("\n"), /completionsMode/);
  const wrongType = { ...job, spec: { ...job.spec, parallelism: "4" } };
  assert.match(kubeTypeErrors([wrongType]).join("\n"), /parallelism|string/);
  assert.throws(() => validate(wrongType), /parallelism/);
  assert.throws(() => validate({ ...job, spec: { ...job.spec, completionMode: "Sometimes" } }), /completionMode/);
});

test("the objects refer to one another: the Service selects the driver pod alone, on the port workers dial; the Secret is what pods mount and read", async () => {
  const o = await objects();
  const [secret, service] = o as [KubeObject & { stringData: { token: string } }, KubeObject & { spec: { clusterIP: string; selector: Record<string, string>; ports: Array<{ port: number; targetPort: number }> } }];
  const driver = jobOf(o, "mnist-driver");
  const workers = jobOf(o, "mnist-workers");
  assert.equal(service.spec.clusterIP, "None", "headless: the name resolves to the driver pod");
  const selects = (labels: Record<string, string>): boolean => Object.entries(service.spec.selector).every(([k, v]) => labels[k] === v);
  assert.ok(selects(driver.pod.metadata.labels));
  assert.ok(!selects(workers.pod.metadata.labels));
  assert.deepEqual(driver.container.ports, [{ name: "join", containerPort: 7071, protocol: "TCP" }]);
  assert.deepEqual(service.spec.ports.map((p) => [p.port, p.targetPort]), [[7071, 7071]]);
  assert.deepEqual(workers.container.command, ["meshtrain", "worker", "--join", `ws://${service.metadata.name}:7071`, "--token-file", "/var/run/meshtrain/token"]);
  assert.deepEqual([workers.spec.completionMode, workers.spec.completions, workers.spec.parallelism], ["Indexed", 4, 4]);
  for (const j of [driver, workers]) {
    assert.deepEqual(j.pod.spec.volumes, [{ name: "token", secret: { secretName: secret.metadata.name } }]);
    assert.deepEqual(j.container.volumeMounts, [{ name: "token", mountPath: "/var/run/meshtrain", readOnly: true }]);
  }
  assert.ok(secret.stringData.token.length >= 32);
  const env = driver.container.env as Array<{ name: string; value?: string; valueFrom?: unknown }>;
  assert.deepEqual(env.map((e) => [e.name, e.value ?? e.valueFrom]), [["MESHTRAIN_WORKERS", "4"], ["MESHTRAIN_PORT", "7071"], ["MESHTRAIN_TOKEN", { secretKeyRef: { name: secret.metadata.name, key: "token" } }]]);
  assert.deepEqual(driver.container.command, ["meshtrain", "demo", "--workers", "4", "--join-port", "7071", "--host", "0.0.0.0", "--model", "cnn", "--batch-size", "64"]);
  // The longest name Kubernetes derives: an indexed pod's hostname <job>-<index>.
  assert.ok(`${"a".repeat(40)}-workers-1023`.length <= 63);
});

test("pods ask for the runtime's memory plus twice the plan's estimate, which grows with the per-worker batch; --memory replaces it", async () => {
  const estimate = { paramsBytes: 2 ** 20, gradientBytes: 2 ** 20, optimizerBytes: 2 ** 21, activationBytes: 60 * 2 ** 20, runtimeGrowthBytes: 0 };
  const m = podMemory(estimate, undefined, "per worker");
  const need = (RUNTIME_BYTES + 2 * 64 * 2 ** 20) / 2 ** 20;
  assert.equal(m.request, `${Math.ceil(need / 64) * 64}Mi`);
  assert.equal(m.limit, `${2 * Math.ceil(need / 64) * 64}Mi`);
  assert.match(m.reason, /activations 60\.0 MiB/);
  assert.deepEqual(podMemory(estimate, "3Gi", "per worker").request, "3Gi");
  const mib = (q: string): number => Number(q.replace("Mi", ""));
  const request = async (batchSize: number, workers: number): Promise<number> => mib((await k8sRun({ ...OPTIONS, batchSize, workers })).memory.request);
  assert.ok((await request(2048, 2)) > (await request(2048, 16)), "more workers: a smaller share of the batch each");
  assert.ok((await request(4096, 2)) > (await request(64, 2)));
});

test("meshtrain k8s refuses what Kubernetes would reject, before writing anything", async () => {
  const refuses = async (o: Partial<K8sCliOptions>, re: RegExp): Promise<void> => {
    await assert.rejects(objects(o), (e: unknown) => e instanceof ConfigError && re.test(e.message) && e.hint !== undefined);
  };
  await refuses({ name: "Mnist_Run" }, /--name "Mnist_Run"/);
  await refuses({ name: "a".repeat(41) }, /--name/);
  await refuses({ namespace: "ML" }, /--namespace/);
  await refuses({ image: "my image" }, /--image/);
  await refuses({ memory: "2GB" }, /--memory "2GB"/);
  await refuses({ cpu: "two" }, /--cpu "two"/);
  await refuses({ model: "/no/such/model.json", driverCommand: "node train.js" }, /model\.json/);
  await refuses({ model: "/no/such/model.json" }, /--driver-command/);
  await refuses({ batchSize: 63, workers: 2 }, /63/);
  assert.equal(quantityProblem("--cpu", "500m", "cpu"), null);
  assert.equal(quantityProblem("--memory", "1.5Gi", "memory"), null);
  await assert.rejects(objects({ name: "MNIST_run", memory: "2GB" }), (e: unknown) => e instanceof ConfigError && /2 problems with the options:\n {2}--name "MNIST_run" .*\n {2}--memory "2GB"/.test(e.message));
});

test("the YAML stream parses back into the same objects, after a header that says how to apply it", async () => {
  const r = await k8sRun(OPTIONS);
  const objs = k8sManifests(r);
  const text = manifestsYaml(objs, r);
  assert.match(text.split("\n")[2]!, /^# apply: kubectl apply -f/);
  assert.deepEqual(parseManifests(text), objs);
});

test("with a shipped bundle: its parts in ConfigMaps under 1 MiB each, an init container on the workers' image joins them in order and unpacks them, and the workers run node on it", async () => {
  // A stand-in for the bundle's bytes (the real one is made and run in test/integration/k8s.test.ts).
  const bytes = Buffer.from(Array.from({ length: 1_700_000 }, (_, i) => (i * 7919) % 251));
  const parts = [0, 1, 2].map((i) => bytes.subarray(i * 700 * 1024, (i + 1) * 700 * 1024).toString("base64"));
  const run = { ...(await k8sRun({ ...OPTIONS, workerImage: "node:20-bookworm-slim" })), bundle: { key: "k123", parts } };
  const o = k8sManifests(run);
  assert.deepEqual(o.map((x) => x.kind), ["Secret", "Service", "Job", "ConfigMap", "ConfigMap", "ConfigMap", "Job"]);
  for (const x of o) validate(x);
  assert.deepEqual(kubeTypeErrors(o), []);
  const maps = o.filter((x) => x.kind === "ConfigMap") as Array<KubeObject & { binaryData: { part: string } }>;
  for (const m of maps) assert.ok(JSON.stringify(m).length < 2 ** 20, `${m.metadata.name} is ${JSON.stringify(m).length} bytes`);
  const workers = jobOf(o, "mnist-workers");
  const pod = workers.pod.spec as { initContainers: Array<{ image: string; command: string[] }>; volumes: Array<{ name: string; configMap?: { name: string }; emptyDir?: object }> };
  assert.equal(pod.initContainers[0]!.image, "node:20-bookworm-slim");
  assert.equal(workers.container.image, "node:20-bookworm-slim");
  assert.equal(jobOf(o, "mnist-driver").container.image, OPTIONS.image, "the driver keeps the image with meshtrain");
  // The init container's cat reads the mounted parts in the order of the bundle's bytes.
  const order = [...pod.initContainers[0]!.command[2]!.matchAll(/\/(\d+)\/part/g)].map((m) => Number(m[1]));
  const mapOf = (i: number): string => pod.volumes.find((v) => v.name === `bundle-${i}`)!.configMap!.name;
  const joined = Buffer.concat(order.map((i) => Buffer.from(maps.find((m) => m.metadata.name === mapOf(i))!.binaryData.part, "base64")));
  assert.ok(joined.equals(bytes), "the parts joined are the bundle");
  assert.match(pod.initContainers[0]!.command[2]!, new RegExp(`\\| tar -xzf - -C ${BUNDLE_DIR}$`));
  assert.deepEqual((workers.container.command as string[]).slice(0, 3), ["node", `${BUNDLE_DIR}/meshtrain-worker-${VERSION}/meshtrain-worker.js`, "worker"]);
});
