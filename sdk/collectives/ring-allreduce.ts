import { CollectiveError, ProtocolError, TimeoutError, type MeshtrainError } from "../errors/errors";
import { ELEMENT_BYTES, HEADER_BYTES, writeHeader, type DecodedFrame, type FrameDType } from "../protocol/frame";
import { bestAccumulate, type Accumulate } from "./accumulate";
import { DECODE, FORMAT_CODE, type HalfCodec, type WireFormat } from "../protocol/wire-formats";
import { chunkOffsets, mod, segmentBounds, shardBounds } from "./segments";
import { bestHalfCodec } from "./half-codec";
import { FrameCopies } from "./frame-copies";
import type { RingPhases } from "./segments";

/**
 * Ring all-reduce (sum) in two phases, reduce-scatter then all-gather, each N-1 ring steps.
 * Segments are split into chunks, and each chunk is forwarded the moment it is reduced, so
 * the ring steps overlap instead of waiting for whole segments.
 *
 * At reduce-scatter step k, position p sends segment (p-k) and adds the received segment
 * (p-k-1); after N-1 steps it holds the full sum of segment (p+1). At all-gather step k it
 * sends segment (p+1-k) and stores the received segment (p-k). Every position ends with
 * the same bytes, because every segment's sum is computed once and then copied.
 *
 * Compressed (a WireFormat), chunks of the packed values travel as 16-bit floats, and each
 * segment's owner rounds its finished sum to them before the all-gather: the same additions
 * and roundings, in the same order, as the native data plane's ring.
 */

/** What the ring reads of a frame. */
type RingFrame = Pick<DecodedFrame, "header" | "bytes">;

const RS = 0;
const AG = 1;

export interface RingNeighbours {
  /**
   * Sends a frame (header, then the chunk's bytes straight from the buffer being reduced) to
   * the next position; resolves once the bytes have left this process.
   */
  sendToNext(header: Buffer, body: Uint8Array): Promise<void>;
  /** Names the previous position for errors, e.g. "rank 2 (127.0.0.1:40111)". */
  readonly prevName: string;
  readonly nextName: string;
}

export interface AllReduceStats {
  /** Time from entering the operation to the first chunk from the previous position. */
  waitMs: number;
  /** The rest of the operation: sending, receiving, adding. */
  commMs: number;
  bytesSent: number;
}

interface Op {
  seq: number;
  data: Float32Array;
  /** Values below this index travel as 16-bit floats of `format` (a FORMAT_CODE). */
  packed: number;
  phases: RingPhases;
  format: number;
  started: number;
  firstFrameAt: number | undefined;
  expected: Map<string, [phase: number, k: number, offset: number, length: number]>;
  sends: Array<Promise<void>>;
  /** Reduce-scatter sends still reading a chunk's memory, by chunk offset. */
  inFlight: Map<number, Promise<void>>;
  /** Received all-gather chunks waiting for such a send before they overwrite its memory. */
  deferred: number;
  bytesSent: number;
  resolve(stats: AllReduceStats): void;
  reject(err: MeshtrainError): void;
  timer: NodeJS.Timeout;
}

export class RingAllReduce {
  private op: Op | null = null;
  /** Frames for the next operation that arrived before this position entered it. */
  private early: RingFrame[] = [];
  /** A link may lend its frames (Link.lendBinary): those kept for later are copied, here. */
  private readonly copies = new FrameCopies();
  private lastSeq = -1;
  private failure: MeshtrainError | null = null;

  constructor(
    private readonly links: RingNeighbours,
    readonly position: number,
    readonly size: number,
    private readonly chunkElements: number,
    private readonly accumulate: Accumulate = bestAccumulate(),
    private readonly codec: HalfCodec = bestHalfCodec(),
  ) {}

  /** Sums `data` in place across the ring (or runs one phase: see RingPhases). `seq` must grow by one per call (the step number works). */
  run(
    data: Float32Array,
    seq: number,
    timeoutMs: number,
    wire?: WireFormat,
    phases: RingPhases = "both",
  ): Promise<AllReduceStats> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.op)
      return Promise.reject(new CollectiveError(`all-reduce ${seq} started while ${this.op.seq} is still running`));
    if (seq <= this.lastSeq) {
      return Promise.reject(new CollectiveError(`all-reduce sequence went backwards: ${seq} after ${this.lastSeq}`));
    }
    this.lastSeq = seq;
    const started = performance.now();
    if (this.size === 1 || data.length === 0) return Promise.resolve({ waitMs: 0, commMs: 0, bytesSent: 0 });
    if (wire && phases === "allGather")
      return Promise.reject(
        new CollectiveError("an all-gather travels in float32: its owners' values are not rounded to a 16-bit format"),
      );
    const packed = wire ? Math.min(wire.packed, data.length) : 0;
    return new Promise((resolve, reject) => {
      const op: Op = {
        seq,
        data,
        packed,
        phases,
        format: wire ? FORMAT_CODE[wire.compression] : 0,
        started,
        firstFrameAt: undefined,
        expected: this.expectedChunks(data.length, packed, phases),
        sends: [],
        inFlight: new Map(),
        deferred: 0,
        bytesSent: 0,
        resolve,
        reject,
        timer: setTimeout(() => this.timedOut(op, timeoutMs), timeoutMs),
      };
      this.op = op;
      // An all-gather alone starts where the reduce-scatter ended: each position sends its shard, segment p + 1.
      const gather = phases === "allGather";
      const [s, e] = gather
        ? shardBounds(data.length, this.size, this.position)
        : segmentBounds(data.length, this.size, this.position);
      for (const [off, length] of this.pieces(s, e, packed)) this.send(op, gather ? AG : RS, 0, off, length);
      const early = this.early;
      this.early = [];
      for (const f of early) {
        this.receive(f);
        this.copies.release(f.bytes);
      }
      this.maybeFinish(op);
    });
  }

  /** The running all-reduce waited `timeoutMs` for its previous neighbour: it fails, naming who and how far it got. */
  private timedOut(op: Op, timeoutMs: number): void {
    const total = this.expectedChunks(op.data.length, op.packed, op.phases).size;
    const got = total - op.expected.size;
    this.abort(
      new TimeoutError(
        `all-reduce ${op.seq}: position ${this.position} waited ${timeoutMs} ms for data from ${this.links.prevName} (received ${got} of ${total} chunks)`,
        {
          details: { step: op.seq, waitingFor: `all-reduce chunks from ${this.links.prevName}` },
          hint: "a worker is stuck or much slower than the others; see the driver's error for which",
        },
      ),
    );
  }

  /** What the running all-reduce waits for, for stall reports; undefined when none runs. */
  waitingFor(): string | undefined {
    const op = this.op;
    if (!op) return undefined;
    const total = this.expectedChunks(op.data.length, op.packed, op.phases).size;
    return `${op.expected.size} of ${total} chunks still to come from ${this.links.prevName}`;
  }

  /** Every ring frame from the previous position comes through here, in arrival order. */
  receive(frame: RingFrame): void {
    if (this.failure) return;
    const h = frame.header;
    const op = this.op;
    if (!op || h.seq !== op.seq) {
      if (h.seq === (op ? op.seq + 1 : this.lastSeq + 1) && h.kind === "ring") {
        this.early.push({ header: h, bytes: this.copies.copy(frame.bytes) });
        return;
      }
      this.abort(
        new ProtocolError(
          `ring frame for all-reduce ${h.seq} from ${this.links.prevName} while at ${op ? op.seq : this.lastSeq}`,
        ),
      );
      return;
    }
    if (op.firstFrameAt === undefined) op.firstFrameAt = performance.now();
    const phase = h.tensor >>> 16;
    const k = h.tensor & 0xffff;
    const key = `${phase}:${k}:${h.offset}`;
    const want = op.expected.get(key);
    if (
      h.kind !== "ring" ||
      h.dtype !== this.dtypeAt(op, h.offset) ||
      h.total !== op.data.length ||
      !want ||
      want[3] !== h.length
    ) {
      this.abort(
        new ProtocolError(
          `unexpected ring frame from ${this.links.prevName}: phase ${phase} step ${k} offset ${h.offset} length ${h.length} ${h.dtype} total ${h.total} (all-reduce ${op.seq} of ${op.data.length} elements, ${op.packed} of them 16-bit)`,
        ),
      );
      return;
    }
    op.expected.delete(key);
    const bytes = frame.bytes;
    const off = h.offset;
    const last = this.size - 2;
    const half = off < op.packed;
    if (phase === RS) {
      if (half) this.codec.decode(op.format, bytes, op.data, off, k === last ? DECODE.addRound : DECODE.add);
      else this.accumulate(op.data, bytes, off);
      if (k < last) this.send(op, RS, k + 1, off, h.length);
      else if (op.phases === "both") this.send(op, AG, 0, off, h.length);
      this.maybeFinish(op);
      return;
    }
    this.gathered(op, k, off, h.length, half, bytes);
  }

  /** An all-gather chunk: stored, and handed on unless this position is its last stop. */
  private gathered(op: Op, k: number, off: number, length: number, half: boolean, bytes: Uint8Array): void {
    const store = (from: Uint8Array): void => {
      if (half) this.codec.decode(op.format, from, op.data, off, DECODE.store);
      else new Uint8Array(op.data.buffer, op.data.byteOffset + off * ELEMENT_BYTES, from.length).set(from);
      if (k < this.size - 2) this.send(op, AG, k + 1, off, length);
    };
    // This chunk's memory was sent at reduce-scatter step k, straight from the buffer; it may
    // be overwritten only once that send has left.
    const sending = op.inFlight.get(off);
    if (!sending) {
      store(bytes);
      this.maybeFinish(op);
      return;
    }
    op.deferred++;
    const kept = this.copies.copy(bytes);
    void sending.then(() => {
      op.deferred--;
      if (this.op !== op) return;
      store(kept);
      this.copies.release(kept);
      this.maybeFinish(op);
    });
  }

  /** A neighbour's link failed: the current operation, and every later one, fails with `err`. */
  fail(err: MeshtrainError): void {
    this.abort(err);
  }

  private abort(err: MeshtrainError): void {
    if (!this.failure) this.failure = err;
    const op = this.op;
    this.op = null;
    this.early = [];
    if (op) {
      clearTimeout(op.timer);
      op.reject(err);
    }
  }

  private send(op: Op, phase: number, k: number, offset: number, length: number): void {
    const header = Buffer.allocUnsafe(HEADER_BYTES);
    const dtype = this.dtypeAt(op, offset);
    writeHeader(header, {
      kind: "ring",
      dtype,
      seq: op.seq,
      tensor: (phase << 16) | k,
      offset,
      length,
      total: op.data.length,
    });
    const half = dtype !== "float32";
    let body: Uint8Array;
    if (half) {
      // A copy: the chunk's memory may be overwritten while it is on its way.
      body = new Uint8Array(2 * length);
      this.codec.encode(op.format, op.data.subarray(offset, offset + length), body);
    } else body = new Uint8Array(op.data.buffer, op.data.byteOffset + offset * ELEMENT_BYTES, length * ELEMENT_BYTES);
    op.bytesSent += HEADER_BYTES + body.byteLength;
    const sent = this.links.sendToNext(header, body).catch((e: unknown) => {
      this.abort(
        new CollectiveError(`all-reduce ${op.seq}: sending to ${this.links.nextName} failed: ${(e as Error).message}`, {
          details: { step: op.seq },
        }),
      );
    });
    if (phase === RS && !half) {
      op.inFlight.set(offset, sent);
      void sent.then(() => {
        if (op.inFlight.get(offset) === sent) op.inFlight.delete(offset);
      });
    }
    op.sends.push(sent);
  }

  private maybeFinish(op: Op): void {
    if (op.expected.size > 0 || op.deferred > 0 || this.op !== op) return;
    void Promise.all(op.sends).then(() => {
      if (this.op !== op) return;
      this.op = null;
      clearTimeout(op.timer);
      const end = performance.now();
      const first = op.firstFrameAt ?? end;
      op.resolve({ waitMs: first - op.started, commMs: end - first, bytesSent: op.bytesSent });
    });
  }

  private dtypeAt(op: Op, offset: number): FrameDType {
    if (offset >= op.packed) return "float32";
    return op.format === FORMAT_CODE.fp16 ? "float16" : "bfloat16";
  }

  /** Chunks of segment [s, e): at most chunkElements each, split where the 16-bit values end. */
  private pieces(s: number, e: number, packed: number): Array<[offset: number, length: number]> {
    const out: Array<[number, number]> = [];
    for (const [a, b] of [
      [s, Math.min(e, Math.max(s, packed))],
      [Math.max(s, packed), e],
    ] as const) {
      for (const off of chunkOffsets(a, b, this.chunkElements)) out.push([off, Math.min(this.chunkElements, b - off)]);
    }
    return out;
  }

  private expectedChunks(length: number, packed: number, phases: RingPhases): Op["expected"] {
    const m: Op["expected"] = new Map();
    const n = this.size;
    const p = this.position;
    const run = [...(phases !== "allGather" ? [RS] : []), ...(phases !== "reduceScatter" ? [AG] : [])];
    for (let k = 0; k <= n - 2; k++) {
      for (const [phase, seg] of [
        [RS, mod(p - k - 1, n)],
        [AG, mod(p - k, n)],
      ] as const) {
        if (!run.includes(phase)) continue;
        const [s, e] = segmentBounds(length, n, seg);
        for (const [off, len] of this.pieces(s, e, packed)) m.set(`${phase}:${k}:${off}`, [phase, k, off, len]);
      }
    }
    return m;
  }
}
