import type { WireFormat } from "../protocol/wire-formats";
import type { RingPhases } from "../collectives/segments";
import type { NativeRingOptions } from "../collectives/native-ring";
import type { AllReduceStats } from "../collectives/ring-allreduce";
import type { Message } from "../protocol/messages";
import type { WireError } from "../protocol/wire-error";
import type { Draft } from "../transport/channel";
import type { Tensorlike } from "../protocol/tensor";

/**
 * Messages between a worker's two threads. The communication thread owns every socket and
 * answers heartbeats even while the compute thread (the process's main thread, where TF.js
 * runs) is busy with a long step. These messages never leave the process.
 */
export type CommToCompute =
  | { kind: "listening"; url: string; port: number }
  /** A request from the driver, or (`via`) from a worker on one of this parameter server's links. */
  | { kind: "request"; msg: Message; attachments: Tensorlike[]; via?: number }
  /** No `data`: the sum is in the exchange's shared memory (worker/exchange.ts). */
  | { kind: "allReduced"; seq: number; data?: Float32Array; stats: AllReduceStats }
  | { kind: "allReduceFailed"; seq: number; error: WireError }
  /** A pipeline tensor from a neighbouring stage. */
  | { kind: "pipeTensor"; frameKind: "activation" | "gradient"; step: number; micro: number; data: Float32Array }
  | { kind: "pipeFailed"; error: WireError }
  /** Parameter-server worker: every server's shard, and what the servers said to a push. */
  | { kind: "psPulled"; seq: number; shards: Float32Array[]; versions: number[]; waitedMs: number[] }
  | { kind: "psPushed"; seq: number; versions: number[]; staleness: number[] }
  | { kind: "psFailed"; seq: number; error: WireError }
  /** Elastic training: the links were re-formed for this membership; steps sent for another are stale. */
  | { kind: "generation"; n: number }
  /** This worker's place in its all-reduce ring, as wired (sharded data parallelism: which shard is its own). */
  | { kind: "ringPlace"; position: number; size: number }
  /**
   * The ring's native data links, connected: this thread runs the all-reduce on them itself (no
   * hop through the communication thread). The descriptors are this process's; this thread closes them.
   */
  | { kind: "nativeRing"; ring: NativeRingOptions }
  /** The native ring failed (a neighbour's heartbeats) or was closed; its sockets are already shut down. */
  | { kind: "nativeRingFailed"; error: WireError }
  /** The driver left or went silent: drop the model and any step in progress. */
  | { kind: "sessionEnded"; reason: string }
  /** `said`: the reason is news to whoever started the worker, so the process prints it before it exits. */
  | { kind: "exit"; code: number; reason: string; said?: boolean }
  /** The output lines posted so far have been sent to the driver (or there is none to send them to). */
  | { kind: "outputFlushed" }
  /** The communication thread has collected its garbage (asked by collectGarbage). */
  | { kind: "garbageCollected" };

export type ComputeToComm =
  | { kind: "reply"; draft: Draft; attachments: Tensorlike[]; via?: number }
  | { kind: "replyError"; re: number | undefined; error: WireError; via?: number }
  | { kind: "psPull"; seq: number; minVersion: number | undefined }
  | {
      kind: "psPush";
      seq: number;
      clock: number;
      pulled: number[];
      shards: Float32Array[];
      wires?: WireFormat[];
      learningRate?: number;
      /** Pushed as this lost rank's (elastic sync servers). */
      standIn?: number;
    }
  /** `generation`: the membership the step belongs to; the communication thread refuses another's. */
  /** `exchange`: no `data`; the first that many values of the exchange's shared memory. */
  | {
      kind: "allReduce";
      seq: number;
      data?: Float32Array;
      exchange?: number;
      generation: number;
      wire?: WireFormat;
      phases?: RingPhases;
    }
  /** The shared memory all-reduces cross from now on (worker/exchange.ts). */
  | { kind: "exchange"; memory: SharedArrayBuffer }
  | {
      kind: "pipeSend";
      to: "prev" | "next";
      frameKind: "activation" | "gradient";
      step: number;
      micro: number;
      data: Float32Array;
    }
  /** What the compute thread does now, reported to the driver as progress. */
  | { kind: "activity"; text: string; state: ActivityState }
  /** Whether the compute thread holds a model (a fit under way): between fits a worker waits longer for a silent driver. */
  | { kind: "holding"; model: boolean }
  /** Lines this process wrote (a worker started elsewhere: the driver sees no pipe of it). */
  | { kind: "output"; stream: "stdout" | "stderr"; lines: string[] }
  /** Send the output lines now, and answer with outputFlushed (the process is about to exit). */
  | { kind: "flushOutput" }
  /** Collect this thread's garbage and answer with garbageCollected: the compute thread is about to read the process's memory. */
  | { kind: "collectGarbage" }
  /** A step's batch the compute thread is done with (transferred): the next ones are received into it. */
  | { kind: "recycle"; buffers: ArrayBuffer[] };

export type ActivityState = "busy" | "waiting" | "idle" | "failed";

/** Buffers to move (not copy) between threads; each attachment owns its whole ArrayBuffer. */
export function transferList(tensors: readonly Tensorlike[]): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  for (const t of tensors) {
    // Shared memory is shared, not handed over (and cannot be listed).
    if (typeof SharedArrayBuffer !== "undefined" && t.data.buffer instanceof SharedArrayBuffer) continue;
    const buf = t.data.buffer as ArrayBuffer;
    if (t.data.byteOffset === 0 && t.data.byteLength === buf.byteLength && !out.includes(buf)) out.push(buf);
  }
  return out;
}

export interface CommConfig {
  host: string;
  port: number;
  token: string;
  maxFrameBytes: number;
  maxConnections: number;
  handshakeTimeoutMs: number;
  /** Local workers end with their driver's session; daemons keep serving. */
  exitWithDriver: boolean;
  version: string;
  /** PEM certificate and key: the worker serves wss://. */
  tls?: { cert: string; key: string };
}
