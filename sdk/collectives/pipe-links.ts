import { CollectiveError, ProtocolError, type MeshtrainError } from "../errors/errors";
import { decodeFrame, ELEMENT_BYTES, HEADER_BYTES, writeHeader } from "../protocol/frame";
import { CLOSE, type Link } from "../transport/link";
import type { Liveness } from "../transport/liveness";
import { watchPeer } from "./peer-watch";

export type PipeDirection = "prev" | "next";
export type PipeKind = "activation" | "gradient";

export interface PipeTensor {
  from: PipeDirection;
  kind: PipeKind;
  step: number;
  micro: number;
  data: Float32Array;
}

export interface PipeEndsOptions {
  /** The link to the previous stage (this worker dialled it), or null on the first stage. */
  prev: { link: Link; name: string } | null;
  /** The link to the next stage (it dialled this worker), or null on the last stage. */
  next: { link: Link; name: string } | null;
  chunkElements: number;
  heartbeat: { intervalMs: number; timeoutMs: number };
  onTensor(t: PipeTensor): void;
  onFailure(err: MeshtrainError): void;
}

/**
 * A pipeline stage's two neighbours: activations go to the next stage and come from the
 * previous one; their gradients travel back. Tensors are chunked into frames (kind, step,
 * micro-batch) and reassembled on arrival; a closed or silent neighbour is a typed error.
 */
export class PipeEnds {
  private readonly partial = new Map<string, { data: Float32Array; remaining: number }>();
  private readonly watches: Liveness[] = [];
  private failed = false;

  constructor(private readonly o: PipeEndsOptions) {
    for (const dir of ["prev", "next"] as const) {
      const end = o[dir];
      if (end) {
        this.watches.push(
          watchPeer(end.link, {
            what: "pipeline",
            name: end.name,
            heartbeat: o.heartbeat,
            fail: (err) => this.fail(err),
            onBinary: (buf) => this.receive(dir, buf),
          }),
        );
      }
    }
  }

  send(to: PipeDirection, kind: PipeKind, step: number, micro: number, data: Float32Array): Promise<void> {
    const end = this.o[to];
    if (!end) return Promise.reject(new CollectiveError(`this stage has no ${to} stage to send ${kind}s to`));
    const sends: Array<Promise<void>> = [];
    const total = data.length;
    // An empty tensor still travels, as one empty chunk, so the receiver knows it is complete.
    const chunks = Math.max(1, Math.ceil(total / this.o.chunkElements));
    for (let i = 0; i < chunks; i++) {
      const offset = i * this.o.chunkElements;
      const length = Math.min(this.o.chunkElements, total - offset);
      const header = Buffer.allocUnsafe(HEADER_BYTES);
      writeHeader(header, { kind, dtype: "float32", seq: step, tensor: micro, offset, length, total });
      sends.push(
        end.link.sendParts(
          header,
          new Uint8Array(data.buffer, data.byteOffset + offset * ELEMENT_BYTES, length * ELEMENT_BYTES),
        ),
      );
    }
    return Promise.all(sends).then(
      () => undefined,
      (err: unknown) => {
        throw new CollectiveError(`sending a ${kind} to ${end.name} failed: ${(err as Error).message}`);
      },
    );
  }

  close(): void {
    this.failed = true;
    for (const w of this.watches) w.stop();
    this.o.prev?.link.close(CLOSE.normal, "session over");
    this.o.next?.link.close(CLOSE.normal, "session over");
  }

  private fail(err: MeshtrainError): void {
    if (this.failed) return;
    this.failed = true;
    for (const w of this.watches) w.stop();
    this.o.onFailure(err);
  }

  private receive(from: PipeDirection, buf: Buffer): void {
    const { header: h, bytes } = decodeFrame(buf);
    // Activations only come from the previous stage, gradients only from the next one.
    const expected: PipeKind = from === "prev" ? "activation" : "gradient";
    if (h.kind !== expected || h.dtype !== "float32") {
      throw new ProtocolError(`a ${h.kind} frame came from the ${from} stage, which only sends ${expected}s`);
    }
    const key = `${h.seq}/${h.tensor}`;
    let p = this.partial.get(key);
    if (!p) {
      p = { data: new Float32Array(h.total), remaining: h.total };
      this.partial.set(key, p);
    }
    if (p.data.length !== h.total || h.length > p.remaining)
      throw new ProtocolError(`inconsistent ${h.kind} chunks for step ${h.seq} micro-batch ${h.tensor}`);
    new Uint8Array(p.data.buffer, h.offset * ELEMENT_BYTES, bytes.length).set(bytes);
    p.remaining -= h.length;
    if (p.remaining === 0) {
      this.partial.delete(key);
      this.o.onTensor({ from, kind: expected, step: h.seq, micro: h.tensor, data: p.data });
    }
  }
}
