import { randomUUID } from "node:crypto";
import * as os from "node:os";
import type { MeshtrainError } from "../errors/errors";
import type { ClusterSpec } from "../spec/cluster-spec";
import { newToken } from "../transport/auth";
import { offerHandshake } from "../transport/handshake";
import { dial } from "../transport/ws-endpoint";
import { wallClock } from "../util/clock";
import { probeGpus } from "./gpus";
import { LocalWorkerProcess } from "./local-process";
import { WorkerHandle } from "./worker-handle";

export interface LaunchHooks {
  stepNow(): number | undefined;
  onLost(handle: WorkerHandle, err: MeshtrainError): void;
}

export interface Launched {
  handles: WorkerHandle[];
  session: string;
  /** Plain-words remarks for the user: fallbacks and their reasons. */
  notes: string[];
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
  try {
    let urls: string[];
    if (spec.workers.kind === "local") {
      const n = spec.workers.count;
      const gpus = spec.workers.devices === "gpu" ? probeGpus() : null;
      if (gpus?.problem) notes.push(`gpus(${n}): ${gpus.problem}; starting ${n} CPU worker(s) instead`);
      if (gpus && !gpus.problem && gpus.indices.length < n) {
        notes.push(`gpus(${n}): only ${gpus.indices.length} GPU(s) visible; workers share them round-robin`);
      }
      for (let r = 0; r < n; r++) {
        const env: NodeJS.ProcessEnv = { ...process.env, MESHTRAIN_TOKEN: token };
        if (gpus && !gpus.problem) env.CUDA_VISIBLE_DEVICES = gpus.indices[r % gpus.indices.length];
        else if (gpus) env.CUDA_VISIBLE_DEVICES = "-1";
        processes.push(LocalWorkerProcess.start(env));
      }
      urls = await Promise.all(processes.map((p, r) => p.listening(spec.timeouts.connectMs, `local worker rank ${r}`)));
    } else {
      urls = spec.workers.urls.map((u) => u.replace(/\/$/, ""));
    }

    for (let r = 0; r < urls.length; r++) {
      const link = await dial(urls[r]!, { maxFrameBytes: spec.maxFrameBytes, timeoutMs: spec.timeouts.connectMs, keepProcessAlive: false });
      try {
        await offerHandshake(link, { token, timeoutMs: spec.timeouts.connectMs, role: "driver", who: `worker rank ${r}` });
      } catch (err) {
        link.terminate();
        throw err;
      }
      handles.push(
        new WorkerHandle({
          rank: r,
          address: urls[r]!,
          link,
          process: processes[r],
          chunkElements: spec.chunkElements,
          maxFrameBytes: spec.maxFrameBytes,
          stepNow: hooks.stepNow,
          onLost: hooks.onLost,
        }),
      );
    }

    const backend = spec.workers.kind === "local" && spec.workers.devices === "gpu" && spec.backend === "auto" ? "auto" : spec.backend;
    const joined = await Promise.all(
      handles.map(async (h) => {
        const sent = wallClock();
        const reply = await h.channel.request(
          {
            type: "join",
            session,
            backend,
            // Local workers share this machine's cores; a remote one may use all of its own.
            threads: spec.workers.kind === "local" ? Math.max(1, Math.floor(os.availableParallelism() / handles.length)) : 0,
            ...(spec.memoryCapBytes !== undefined ? { memoryCapBytes: spec.memoryCapBytes } : {}),
            heartbeatIntervalMs: spec.heartbeat.intervalMs,
            heartbeatTimeoutMs: spec.heartbeat.timeoutMs,
          },
          "joined",
          { timeoutMs: spec.timeouts.connectMs, waitingFor: "join (backend start-up)" },
        );
        // The reply was stamped about halfway between sending and receiving (backend start-up
        // makes this coarse on a first join; local workers share the clock anyway).
        h.clockOffsetMs = reply.msg.clock - (sent + wallClock()) / 2;
        return reply;
      }),
    );
    joined.forEach((j, r) => {
      handles[r]!.info = j.msg.info;
    });
    for (const j of joined) for (const note of j.msg.info.notes) if (!notes.includes(note)) notes.push(note);

    // The driver's link to each worker, measured once: the planner predicts with it. A tiny
    // probe's round trip is the per-message latency (through both processes' threads); a 1 MiB
    // one, less that latency, gives the bandwidth.
    const small = { data: new Float32Array(1), shape: [1] };
    const big = { data: new Float32Array(256 * 1024), shape: [256 * 1024] };
    const roundTrip = async (h: WorkerHandle, t: typeof small): Promise<{ ms: number; offset: number }> => {
      const sent = wallClock();
      const reply = await h.channel.request({ type: "probe" }, "probed", { timeoutMs: spec.timeouts.connectMs, waitingFor: "a link probe", attachments: [t] });
      const back = wallClock();
      return { ms: back - sent, offset: reply.msg.clock - (sent + back) / 2 };
    };
    for (const h of handles) {
      const smalls: Array<{ ms: number; offset: number }> = [];
      const bigs: number[] = [];
      for (let i = 0; i < 8; i++) smalls.push(await roundTrip(h, small));
      for (let i = 0; i < 3; i++) bigs.push((await roundTrip(h, big)).ms);
      const rtts = smalls.map((s) => s.ms);
      // The clock offset from the shortest exchange is off by at most half its round trip
      // (NTP's rule); the join's own estimate can be off by the backend's whole start-up.
      h.clockOffsetMs = smalls.reduce((best, s) => (s.ms < best.ms ? s : best)).offset;
      // Best of each, like the workers' calibration: the link's own speed, not a busy moment's.
      const rtt = Math.min(...rtts);
      h.linkLatencyMs = rtt / 2;
      h.linkBytesPerSecond = big.data.byteLength / Math.max(1e-4, (Math.min(...bigs) - rtt) / 1000);
    }
    for (const h of handles) h.startHeartbeat(spec.heartbeat.intervalMs, spec.heartbeat.timeoutMs);
    return { handles, session, notes };
  } catch (err) {
    for (const h of handles) {
      h.expectClose();
      h.channel.close();
    }
    await Promise.all(processes.map((p) => p.stop(1000)));
    throw err;
  }
}
