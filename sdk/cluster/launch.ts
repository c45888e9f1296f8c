import { randomUUID } from "node:crypto";
import * as os from "node:os";
import { LaunchError, TimeoutError, type MeshtrainError } from "../errors/errors";
import type { ClusterSpec, WorkersSpec } from "../config/cluster-spec";
import { newToken } from "../transport/auth";
import { offerHandshake } from "../transport/handshake";
import { dial } from "../transport/ws-endpoint";
import { wallClock } from "../util/clock";
import { cpuDevice, gpuDevices, type LocalDevice } from "../backends/local-devices";
import { vulkanEnv } from "../backends/webgpu/vulkan";
import { JoinListener } from "./join-listener";
import { probeLink } from "./link-probe";
import { makeLauncher } from "../launchers/make-launcher";
import type { Launcher } from "../launchers/launcher";
import { interruptibly } from "./launch-interrupt";
import { LocalWorkerProcess } from "../members/local-process";
import { labelOf, WorkerHandle } from "../members/worker-handle";
import type { WorkerOutput } from "../members/worker-output";
import type { WorkerInfo } from "../protocol/messages";

export interface LaunchHooks {
  stepNow(): number | undefined;
  onLost(handle: WorkerHandle, err: MeshtrainError): void;
  /** Where every worker's output goes, local (its pipes) or not (its messages). */
  output: WorkerOutput;
}

export interface Launched {
  handles: WorkerHandle[];
  /** Parameter servers (strategy "ps"), in server order. */
  servers: WorkerHandle[];
  session: string;
  /** The cluster token (given, or made for local workers): for workers added later. Never logged. */
  token: string;
  /** Plain-words remarks for the user: fallbacks and their reasons. */
  notes: string[];
  /** Where workers join (join()): open for add() while the cluster lives; closing it ends them. */
  joins: JoinListener | undefined;
}

/**
 * Starts (local) or reaches (remote) every worker, authenticates, joins them to one session,
 * and connects the ring. Anything started is stopped again if a later part fails.
 */
export async function startWorkers(spec: ClusterSpec, hooks: LaunchHooks): Promise<Launched> {
  const session = randomUUID();
  const token = spec.token ?? newToken();
  const notes: string[] = [];
  const processes: LocalWorkerProcess[] = [];
  const handles: WorkerHandle[] = [];
  const w = spec.workers;
  const launcher = w.kind === "join" && w.launcher ? makeLauncher(w.launcher, w.timeoutMs) : undefined;
  const joins = w.kind === "join" ? await JoinListener.open({ host: (await launcher?.listenHost?.()) ?? w.host, port: w.port, token, expected: w.count, handshakeTimeoutMs: 10_000, ...(w.browsers ? { browsers: { maxFrameBytes: spec.maxFrameBytes } } : {}) }) : undefined;
  if (w.kind === "join" && joins?.inviteUrl) invite(w, joinAddress(joins.inviteUrl));
  try {
    const roles = await interruptibly(joins, () => (w.kind === "join" && launcher ? launchThenRoles(spec, w, joins!, launcher, token) : rolesOf(spec, joins)));
    if (launcher) notes.push(...(await launcher.notes()));
    const localWorkers = spec.workers.kind === "local" ? spec.workers.count : 0;
    const nameOf = (e: (typeof roles)[number]): string => (e.role === "ps" ? `parameter server ${e.index}` : `worker rank ${e.index}`);

    const gpus = spec.workers.kind === "local" && spec.workers.devices === "gpu" ? await gpuDevices(spec, localWorkers) : null;
    if (gpus) notes.push(...gpus.notes);
    const devices = new Map<number, LocalDevice>();
    const started = new Map<number, LocalWorkerProcess>();
    roles.forEach((e, k) => {
      if (e.url) return;
      // Parameter servers only apply optimizer steps: they stay on the CPU.
      const device = e.role === "worker" && gpus ? gpus.devices[e.index]! : cpuDevice();
      devices.set(k, device);
      // A backend asked for by name on every worker: webgpu needs the Vulkan loader's environment from the start.
      const env: NodeJS.ProcessEnv = { ...process.env, ...(spec.backend === "webgpu" ? vulkanEnv(null) : {}), ...device.env, MESHTRAIN_TOKEN: token };
      const label = labelOf(e.role, e.index);
      const p = LocalWorkerProcess.start(env, moduleArgs(spec), (stream, text) => hooks.output.line(label, stream, text));
      processes.push(p);
      started.set(k, p);
    });
    const urls = await Promise.all(roles.map((e, k) => e.url ?? started.get(k)!.listening(spec.timeouts.connectMs, `local ${nameOf(e)}`)));

    for (let k = 0; k < roles.length; k++) {
      const e = roles[k]!;
      handles.push(await reach(spec, { token, url: urls[k]!, rank: e.index, role: e.role, process: started.get(k), hooks }));
    }
    const localCount = started.size;

    const joined = await Promise.all(handles.map((h) => joinSession(spec, session, h, h.process ? Math.max(1, Math.floor(os.availableParallelism() / localCount)) : 0)));
    handles.forEach((h, k) => refuseWithoutItsGpu(spec, h, devices.get(k)));
    for (const j of joined) for (const note of j.notes) if (!notes.includes(note)) notes.push(note);
    for (const h of handles) await probeLink(spec, h);
    for (const h of handles) h.startHeartbeat(spec.heartbeat.intervalMs, spec.heartbeat.timeoutMs);
    return { handles: handles.filter((h) => h.role === "worker"), servers: handles.filter((h) => h.role === "ps"), session, token, notes, joins };
  } catch (err) {
    await joins?.close();
    for (const h of handles) {
      h.expectClose();
      h.channel.close();
    }
    await Promise.all(processes.map((p) => p.stop(1000)));
    throw err;
  }
}

type Role = { role: "worker" | "ps"; index: number; url?: string };

/**
 * Has the launcher start the workers that join `joins`, then waits for them; a wait that runs
 * out gets the launcher's account of why when it has one (a Slurm job still pending).
 */
async function launchThenRoles(spec: ClusterSpec, w: Extract<WorkersSpec, { kind: "join" }>, joins: JoinListener, launcher: Launcher, token: string): Promise<Role[]> {
  joins.attach(launcher);
  await launcher.start({ joinUrl: joinAddress(joins.url), token, joinTimeoutS: Math.ceil(w.timeoutMs / 1000), abort: (err) => joins.abort(err) });
  try {
    return await rolesOf(spec, joins, true);
  } catch (err) {
    throw (err instanceof TimeoutError && (await launcher.late?.())) || err;
  }
}

/** Tabs join by opening the invite link: printed at once, and handed to onInvite (a notebook draws it). */
function invite(w: Extract<WorkersSpec, { kind: "join" }>, url: string): void {
  process.stderr.write(`meshtrain: browser tabs join as workers by opening ${url}\n`);
  w.onInvite?.(url);
}

/**
 * Who to start or reach: workers (local, listed, or joining `joins` now), then parameter servers,
 * the same program given different parts at load.
 */
async function rolesOf(spec: ClusterSpec, joins: JoinListener | undefined, launched = false): Promise<Role[]> {
  const roles: Role[] = [];
  const w = spec.workers;
  if (w.kind === "local") for (let r = 0; r < w.count; r++) roles.push({ role: "worker", index: r });
  else if (w.kind === "remote") w.urls.forEach((u, r) => roles.push({ role: "worker", index: r, url: u.replace(/\/$/, "") }));
  else if (joins) {
    if (!launched) process.stderr.write(`meshtrain: waiting up to ${Math.round(w.timeoutMs / 1000)} s for ${w.count} worker(s) to join: meshtrain worker --join ${joinAddress(joins.url)}\n`);
    for (const j of await joins.waitForAll(w.timeoutMs)) roles.push({ role: "worker", index: j.rank, url: j.url });
  }
  const sv = spec.servers;
  if (sv?.kind === "local") for (let i = 0; i < sv.count; i++) roles.push({ role: "ps", index: i });
  else if (sv) sv.urls.forEach((u, i) => roles.push({ role: "ps", index: i, url: u.replace(/\/$/, "") }));
  return roles;
}

/** Connects to a worker (or server), proves the token, and makes the driver's handle for it. */
async function reach(
  spec: ClusterSpec,
  o: { token: string; url: string; rank: number; role: "worker" | "ps"; process: LocalWorkerProcess | undefined; hooks: LaunchHooks },
): Promise<WorkerHandle> {
  const link = await dial(o.url, { maxFrameBytes: spec.maxFrameBytes, timeoutMs: spec.timeouts.connectMs, keepProcessAlive: false, ...(spec.tls ? { ca: Buffer.from(spec.tls.ca) } : {}) });
  try {
    await offerHandshake(link, { token: o.token, timeoutMs: spec.timeouts.connectMs, role: "driver", who: o.role === "ps" ? `parameter server ${o.rank}` : `worker rank ${o.rank}` });
  } catch (err) {
    link.terminate();
    throw err;
  }
  return new WorkerHandle({
    rank: o.rank,
    role: o.role,
    address: o.url,
    link,
    process: o.process,
    chunkElements: spec.chunkElements,
    maxFrameBytes: spec.maxFrameBytes,
    stepNow: o.hooks.stepNow,
    onLost: o.hooks.onLost,
    output: o.hooks.output,
  });
}

/** Joins a connected worker to the session: it starts its backend and says what it runs on. */
async function joinSession(spec: ClusterSpec, session: string, h: WorkerHandle, threads: number): Promise<WorkerInfo> {
  const backend = spec.workers.kind === "local" && spec.workers.devices === "gpu" && spec.backend === "auto" ? "auto" : spec.backend;
  const sent = wallClock();
  const reply = await h.channel.request(
    {
      type: "join",
      session,
      backend,
      // Local workers share this machine's cores; a remote one may use all of its own.
      threads,
      ...(spec.memoryCapBytes !== undefined ? { memoryCapBytes: spec.memoryCapBytes } : {}),
      heartbeatIntervalMs: spec.heartbeat.intervalMs,
      heartbeatTimeoutMs: spec.heartbeat.timeoutMs,
      heartbeatIdleTimeoutMs: spec.heartbeat.idleTimeoutMs,
    },
    "joined",
    { timeoutMs: spec.timeouts.connectMs, waitingFor: "join (backend start-up)" },
  );
  // The reply was stamped about halfway between sending and receiving (backend start-up
  // makes this coarse on a first join; the probes below refine it).
  h.clockOffsetMs = reply.msg.clock - (sent + wallClock()) / 2;
  h.info = reply.msg.info;
  return reply.msg.info;
}

/**
 * One more worker for a running cluster (elastic training): started here when `url` is not
 * given, else reached there; authenticated, joined to the session, its link measured.
 */
export async function addWorker(spec: ClusterSpec, o: { session: string; token: string; rank: number; url: string | undefined; hooks: LaunchHooks; joins: JoinListener | undefined }): Promise<WorkerHandle> {
  // A worker added to a GPU cluster shares the first worker's device; to a CPU cluster, it is a CPU worker.
  const device = spec.workers.kind === "local" && spec.workers.devices === "gpu" ? (await gpuDevices(spec, 1)).devices[0]! : cpuDevice();
  const env = { ...process.env, ...device.env, MESHTRAIN_TOKEN: o.token };
  const label = labelOf("worker", o.rank);
  const proc = o.url === undefined && !o.joins ? LocalWorkerProcess.start(env, moduleArgs(spec), (stream, text) => o.hooks.output.line(label, stream, text)) : undefined;
  try {
    const joined = o.url === undefined && o.joins ? await o.joins.next(o.rank, spec.timeouts.connectMs) : undefined;
    const url = o.url ?? joined?.url ?? (await proc!.listening(spec.timeouts.connectMs, `local worker rank ${o.rank}`));
    const h = await reach(spec, { token: o.token, url, rank: o.rank, role: "worker", process: proc, hooks: o.hooks });
    try {
      await joinSession(spec, o.session, h, proc ? Math.max(1, Math.floor(os.availableParallelism() / 2)) : 0);
      if (proc) refuseWithoutItsGpu(spec, h, device);
      await probeLink(spec, h);
    } catch (err) {
      h.expectClose();
      h.channel.close();
      throw err;
    }
    h.startHeartbeat(spec.heartbeat.intervalMs, spec.heartbeat.timeoutMs);
    return h;
  } catch (err) {
    await proc?.stop(1000);
    throw err;
  }
}

/**
 * A local worker given a GPU that came up without it (its GPU backend failed to start) ends the
 * launch naming the worker and why, unless fallback: "cpu" lets it train on the CPU.
 */
function refuseWithoutItsGpu(spec: ClusterSpec, h: WorkerHandle, device: LocalDevice | undefined): void {
  if (!device || device.assignment.kind === "cpu") return;
  const onIt = device.assignment.kind === "cuda" ? h.info?.backend === "node-gpu" : h.info?.backend === "webgpu";
  if (onIt || (spec.workers.kind === "local" && spec.workers.fallback === "cpu")) return;
  throw new LaunchError(`worker rank ${h.rank} (${h.address}) was given ${device.label} but runs "${h.info?.backend}": ${(h.info?.notes ?? []).join("; ") || "it did not say why"}`, {
    hint: 'install what the note says is missing on this machine, or pass .gpus(n, { fallback: "cpu" }) to train on CPU workers',
    details: { rank: h.rank, address: h.address },
  });
}

/** The join address as workers elsewhere would dial it: a wildcard host shown as this machine's name. */
function joinAddress(url: string): string {
  return url.replace(/\/\/(0\.0\.0\.0|\[::\])(?=:)/, `//${os.hostname()}`);
}

/** The worker arguments that make it import the builder's modules() at start. */
function moduleArgs(spec: ClusterSpec): string[] {
  return (spec.modules ?? []).flatMap((m) => ["--module", m]);
}
