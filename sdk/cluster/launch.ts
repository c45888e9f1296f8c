import { randomUUID } from "node:crypto";
import * as os from "node:os";
import { LaunchError, StateError, type MeshtrainError } from "../errors/errors";
import type { ClusterSpec } from "../config/cluster-spec";
import { newToken } from "../transport/auth";
import { offerHandshake } from "../transport/handshake";
import { dial } from "../transport/ws-endpoint";
import { wallClock } from "../util/clock";
import { cpuDevice, gpuDevices, type LocalDevice } from "../backends/local-devices";
import { vulkanEnv } from "../backends/webgpu/vulkan";
import { JoinListener } from "./join-listener";
import { probeLink } from "./link-probe";
import { makeLauncher } from "../launchers/make-launcher";
import { interruptibly } from "./launch-interrupt";
import { invite, joinAddress, launchThenRoles, rolesOf, type Role } from "./launch-roles";
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
  const joins =
    w.kind === "join"
      ? await JoinListener.open({
          host: (await launcher?.listenHost?.()) ?? w.host,
          port: w.port,
          token,
          expected: w.count,
          handshakeTimeoutMs: 10_000,
          ...(w.browsers ? { browsers: { maxFrameBytes: spec.maxFrameBytes } } : {}),
        })
      : undefined;
  if (w.kind === "join" && joins?.inviteUrl) invite(w, joinAddress(joins.inviteUrl));
  try {
    const roles = await interruptibly(joins, () =>
      w.kind === "join" && launcher ? launchThenRoles(spec, w, joins!, launcher, token) : rolesOf(spec, joins),
    );
    if (launcher) notes.push(...(await launcher.notes()));
    // Each process listed as it starts: one that fails to start stops those before it.
    const local = await startLocal(spec, roles, token, hooks, processes);
    notes.push(...local.notes);
    const urls = await Promise.all(
      roles.map((e, k) => e.url ?? local.started.get(k)!.listening(spec.timeouts.connectMs, `local ${nameOf(e)}`)),
    );
    for (let k = 0; k < roles.length; k++) {
      const e = roles[k]!;
      const process = local.started.get(k);
      handles.push(await reach(spec, { token, url: urls[k]!, rank: e.index, role: e.role, process, hooks }));
    }
    await joinAll(spec, session, handles, local, notes);
    return {
      handles: handles.filter((h) => h.role === "worker"),
      servers: handles.filter((h) => h.role === "ps"),
      session,
      token,
      notes,
      joins,
    };
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

const nameOf = (e: Role): string => (e.role === "ps" ? `parameter server ${e.index}` : `worker rank ${e.index}`);

/** The local workers and servers started (by role index), each on its device. */
interface LocalStart {
  started: Map<number, LocalWorkerProcess>;
  devices: Map<number, LocalDevice>;
  notes: string[];
}

/** Starts a process for each role without a URL, on the device it was given (GPU workers on theirs). */
async function startLocal(
  spec: ClusterSpec,
  roles: readonly Role[],
  token: string,
  hooks: LaunchHooks,
  processes: LocalWorkerProcess[],
): Promise<LocalStart> {
  const localWorkers = spec.workers.kind === "local" ? spec.workers.count : 0;
  const gpus =
    spec.workers.kind === "local" && spec.workers.devices === "gpu" ? await gpuDevices(spec, localWorkers) : null;
  const devices = new Map<number, LocalDevice>();
  const started = new Map<number, LocalWorkerProcess>();
  roles.forEach((e, k) => {
    if (e.url) return;
    // Parameter servers only apply optimizer steps: they stay on the CPU.
    const device = e.role === "worker" && gpus ? gpus.devices[e.index]! : cpuDevice();
    devices.set(k, device);
    // A backend asked for by name on every worker: webgpu needs the Vulkan loader's environment from the start.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...(spec.backend === "webgpu" ? vulkanEnv(null) : {}),
      ...device.env,
      MESHTRAIN_TOKEN: token,
    };
    const label = labelOf(e.role, e.index);
    const p = LocalWorkerProcess.start(env, moduleArgs(spec), (stream, text) => hooks.output.line(label, stream, text));
    processes.push(p);
    started.set(k, p);
  });
  return { started, devices, notes: gpus?.notes ?? [] };
}

/** Joins every member to the session (local ones share the machine's cores), then probes its link and starts its heartbeat. */
async function joinAll(
  spec: ClusterSpec,
  session: string,
  handles: readonly WorkerHandle[],
  local: LocalStart,
  notes: string[],
): Promise<void> {
  const threads = Math.max(1, Math.floor(os.availableParallelism() / local.started.size));
  const joined = await Promise.all(handles.map((h) => joinSession(spec, session, h, h.process ? threads : 0)));
  handles.forEach((h, k) => refuseWithoutItsGpu(spec, h, local.devices.get(k)));
  for (const j of joined) for (const note of j.notes) if (!notes.includes(note)) notes.push(note);
  for (const h of handles) await probeLink(spec, h);
  for (const h of handles) h.startHeartbeat(spec.heartbeat.intervalMs, spec.heartbeat.timeoutMs);
}

/** Connects to a worker (or server), proves the token, and makes the driver's handle for it. */
async function reach(
  spec: ClusterSpec,
  o: {
    token: string;
    url: string;
    rank: number;
    role: "worker" | "ps";
    process: LocalWorkerProcess | undefined;
    hooks: LaunchHooks;
  },
): Promise<WorkerHandle> {
  const link = await dial(o.url, {
    maxFrameBytes: spec.maxFrameBytes,
    timeoutMs: spec.timeouts.connectMs,
    keepProcessAlive: false,
    ...(spec.tls ? { ca: Buffer.from(spec.tls.ca) } : {}),
  });
  try {
    await offerHandshake(link, {
      token: o.token,
      timeoutMs: spec.timeouts.connectMs,
      role: "driver",
      who: o.role === "ps" ? `parameter server ${o.rank}` : `worker rank ${o.rank}`,
    });
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
  const backend =
    spec.workers.kind === "local" && spec.workers.devices === "gpu" && spec.backend === "auto" ? "auto" : spec.backend;
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
export async function addWorker(
  spec: ClusterSpec,
  o: {
    session: string;
    token: string;
    rank: number;
    url: string | undefined;
    hooks: LaunchHooks;
    joins: JoinListener | undefined;
    /** The prefix of its output lines, if not "rank <rank>" (a spare's changes when it takes a rank). */
    label?: () => string;
  },
): Promise<WorkerHandle> {
  // A worker added to a GPU cluster shares the first worker's device; to a CPU cluster, it is a CPU worker.
  const device =
    spec.workers.kind === "local" && spec.workers.devices === "gpu"
      ? (await gpuDevices(spec, 1)).devices[0]!
      : cpuDevice();
  const env = { ...process.env, ...device.env, MESHTRAIN_TOKEN: o.token };
  const label = o.label ?? (() => labelOf("worker", o.rank));
  const proc =
    o.url === undefined && !o.joins
      ? LocalWorkerProcess.start(env, moduleArgs(spec), (stream, text) => o.hooks.output.line(label(), stream, text))
      : undefined;
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
  throw new LaunchError(
    `worker rank ${h.rank} (${h.address}) was given ${device.label} but runs "${h.info?.backend}": ${(h.info?.notes ?? []).join("; ") || "it did not say why"}`,
    {
      hint: 'install what the note says is missing on this machine, or pass .gpus(n, { fallback: "cpu" }) to train on CPU workers',
      details: { rank: h.rank, address: h.address },
    },
  );
}

/** The worker arguments that make it import the builder's modules() at start. */
function moduleArgs(spec: ClusterSpec): string[] {
  return (spec.modules ?? []).flatMap((m) => ["--module", m]);
}

/** A worker added while a fit ran, ready only once the fit had ended: it is part of no fit, nor of the cluster. Stopped; the error add() rejects with. */
export async function lateJoiner(h: WorkerHandle, rank: number): Promise<StateError> {
  h.expectClose();
  h.channel.close();
  await h.process?.stop(3000);
  return new StateError(`add(): the fit ended before the new worker (rank ${rank}) was ready; it was stopped`, {
    hint: "add it earlier in the fit, or from a callback that awaits add(): the fit waits there until the worker is in",
  });
}
