import { FrameTooLargeError, ProtocolError, TimeoutError, WorkerLostError, type ErrorDetails, type MeshtrainError } from "../errors/errors";
import { fromWireJson, toWireJson } from "../protocol/json";
import { decodeFrame, encodeFrame, frameParts, type FrameHeader } from "../protocol/frame";
import { CARRIES_TENSORS } from "../protocol/message-traits";
import { MessageSchema, type Message, type MessageOf, type MessageType } from "../protocol/messages";
import { allocate, dtypeOf, elementCount, type DType, type TensorData, type Tensorlike, type TensorSpec } from "../protocol/tensor";
import { PROTOCOL_VERSION } from "../protocol/version";
import { fromWireError, toWireError } from "../protocol/wire-error";
import { CLOSE, type Link } from "./link";
import { Liveness } from "./liveness";

export interface Incoming<M extends Message = Message> {
  msg: M;
  attachments: Tensorlike[];
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A message as its sender writes it: the channel fills in `v`, and `id` for requests. */
export type Draft = DistributiveOmit<Message, "v" | "attachments">;
export type RequestDraft = DistributiveOmit<Extract<Message, { id: number }>, "v" | "id" | "attachments">;

export interface ChannelOptions {
  /** Names the other end in every error, e.g. "worker rank 2" or "the driver". */
  peerName: string;
  /** Rank and address added to the details of errors about this channel. */
  details: ErrorDetails;
  chunkElements: number;
  /** The largest WebSocket message the other end accepts. */
  maxFrameBytes: number;
  /** Refuses messages whose attachments would need more memory than this. */
  maxAttachmentBytes: number;
  onMessage(incoming: Incoming): void;
  /**
   * The link closed; `error` says why: the error the other end sent just before closing, if
   * it sent one, else a WorkerLostError. Called once.
   */
  onClose(error: MeshtrainError): void;
  /** A frame that was refused (already answered with an error reply); for logs. */
  onInvalid?(error: MeshtrainError): void;
  /** Where attachments are received (default: new arrays): a worker's reuses the batches its compute thread is done with. */
  allocate?(dtype: DType, length: number): TensorData;
}

interface PendingRequest {
  expect: MessageType;
  resolve(incoming: Incoming): void;
  reject(err: MeshtrainError): void;
  timer: NodeJS.Timeout | undefined;
}

interface Assembly {
  msg: Message;
  seq: number;
  specs: TensorSpec[];
  data: TensorData[];
  remaining: number[];
}

/**
 * Control messages over a Link: every incoming frame is validated, attachments are reassembled
 * from binary chunks, requests are matched to replies, and silence is noticed by heartbeats.
 */
export class Channel {
  private nextId = 1;
  private readonly pending = new Map<number, PendingRequest>();
  private assembly: Assembly | null = null;
  private readonly liveness = new Liveness();
  private closedWith: MeshtrainError | undefined;
  /** An error the other end sent on its own just before closing: the reason it closed. */
  private lastWord: MeshtrainError | undefined;

  constructor(readonly link: Link, private readonly o: ChannelOptions) {
    link.setHandlers({
      text: (text) => this.onText(text),
      binary: (buf) => this.onBinary(buf),
      close: (code, reason) => this.onLinkClose(code, reason),
      pong: () => this.liveness.heard(),
    });
  }

  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  /** Requests sent and not yet answered. */
  get unanswered(): number {
    return this.pending.size;
  }

  /** Milliseconds since anything (message or pong) arrived from the other end. */
  silentForMs(): number {
    return this.liveness.silentForMs();
  }

  /** Silence that this process's own stalls do not explain (see Liveness). */
  peerSilenceMs(): number {
    return this.liveness.peerSilenceMs();
  }

  /** Resolves once every frame was handed to the OS (or the link closed); `owned`: nothing changes the attachments until then, so they are sent from where they are, not copied. */
  send(draft: Draft, attachments: readonly Tensorlike[] = [], owned = false): Promise<void> {
    if (this.closedWith) throw this.closedWith;
    const specs = attachments.map((t) => ({ dtype: dtypeOf(t.data), shape: [...t.shape] }));
    const msg = { ...draft, v: PROTOCOL_VERSION, ...(CARRIES_TENSORS.has(draft.type) ? { attachments: specs } : {}) };
    const text = toWireJson(msg);
    if (Buffer.byteLength(text) > this.o.maxFrameBytes) {
      throw new FrameTooLargeError(
        `the "${draft.type}" message to ${this.o.peerName} is ${Buffer.byteLength(text)} bytes, above the ${this.o.maxFrameBytes}-byte frame limit`,
        { details: this.o.details, hint: "raise .limits({ maxFrameBytes }) on the driver and --max-frame-bytes on the workers together" },
      );
    }
    this.link.sendText(text);
    const seq = (draft as { id?: number; re?: number }).id ?? (draft as { re?: number }).re ?? 0;
    return Promise.all(attachments.flatMap((t, index) => this.sendTensor(seq, index, t.data, owned))).then(() => undefined);
  }

  private sendTensor(seq: number, tensor: number, data: TensorData, owned: boolean): Array<Promise<void>> {
    const total = data.length;
    const sent: Array<Promise<void>> = [];
    // Zero-length tensors send no frames: the receiver sees them complete from the announcement.
    for (let offset = 0; offset < total; offset += this.o.chunkElements) {
      const length = Math.min(this.o.chunkElements, total - offset);
      const header: FrameHeader = { kind: "attachment", dtype: dtypeOf(data), seq, tensor, offset, length, total };
      sent.push((owned ? this.link.sendParts(...frameParts(header, data, offset)) : this.link.sendBinary(encodeFrame(header, data, offset))).catch(() => undefined));
    }
    return sent;
  }

  /** Sends a request and waits for its reply of type `expect`; an error reply rejects with the rebuilt error. */
  request<T extends MessageType>(
    draft: RequestDraft,
    expect: T,
    o: { timeoutMs: number; waitingFor: string; attachments?: readonly Tensorlike[]; owned?: boolean },
  ): Promise<Incoming<MessageOf<T>>> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new TimeoutError(`waited ${o.timeoutMs} ms for ${o.waitingFor} from ${this.o.peerName}`, {
            details: { ...this.o.details, waitingFor: `${o.waitingFor} from ${this.o.peerName}` },
            hint: "the worker is alive but did not finish in time; raise .timeouts({ stepMs }) for long steps",
          }),
        );
      }, o.timeoutMs);
      this.pending.set(id, {
        expect,
        resolve: resolve as (i: Incoming) => void,
        reject,
        timer,
      });
      try {
        this.send({ ...draft, id } as Draft, o.attachments ?? [], o.owned);
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(err);
      }
    });
  }

  replyError(re: number | undefined, err: unknown): void {
    if (this.closedWith) return;
    this.link.sendText(
      toWireJson({ type: "error", v: PROTOCOL_VERSION, ...(re !== undefined ? { re } : {}), error: toWireError(err) }),
    );
  }

  /** Pings every intervalMs; calls onSilent once if nothing was heard for timeoutMs (a function: the limit that holds now). */
  startHeartbeat(intervalMs: number, timeoutMs: number | (() => number), onSilent: (silentMs: number, limitMs: number) => void): void {
    this.liveness.start(this.link, intervalMs, timeoutMs, onSilent);
  }

  stopHeartbeat(): void {
    this.liveness.stop();
  }

  /** Ends every pending request with `err` and closes the link. */
  fail(err: MeshtrainError, code: number = CLOSE.normal): void {
    this.finish(err);
    this.link.close(code, err.summary.slice(0, 100));
  }

  close(code: number = CLOSE.normal, reason = ""): void {
    this.link.close(code, reason);
  }

  private finish(err: MeshtrainError): boolean {
    if (this.closedWith) return false;
    this.closedWith = err;
    this.stopHeartbeat();
    for (const id of [...this.pending.keys()]) this.takePending(id)?.reject(err);
    return true;
  }

  private onLinkClose(code: number, reason: string): void {
    const err =
      this.lastWord ??
      (code === CLOSE.tooBig
        ? new FrameTooLargeError(`${this.o.peerName} (${this.link.address}) closed the connection: a frame exceeded its size limit`, {
            details: { ...this.o.details, closeCode: code },
            hint: "raise .limits({ maxFrameBytes }) on the driver and --max-frame-bytes on the workers together",
          })
        : undefined) ??
      new WorkerLostError(
      `connection to ${this.o.peerName} (${this.link.address}) closed (code ${code}${reason ? `: ${reason}` : ""})`,
      { details: { ...this.o.details, closeCode: code } },
    );
    if (this.finish(err)) this.o.onClose(err);
  }

  /** The request `re` answers, no longer pending. */
  private takePending(re: number | undefined): PendingRequest | undefined {
    const p = re === undefined ? undefined : this.pending.get(re);
    if (p?.timer) clearTimeout(p.timer);
    if (p) this.pending.delete(re!);
    return p;
  }

  private refuse(re: number | undefined, err: MeshtrainError): void {
    this.replyError(re, err);
    this.o.onInvalid?.(err);
  }

  private onText(text: string): void {
    this.liveness.heard();
    let raw: unknown;
    try {
      raw = fromWireJson(text);
    } catch {
      this.refuse(undefined, new ProtocolError(`message from ${this.o.peerName} is not valid JSON (${text.length} bytes)`));
      return;
    }
    const loose = raw as { id?: unknown; re?: unknown; v?: unknown } | null;
    const re = typeof loose?.id === "number" ? loose.id : undefined;
    // A reply that fails its schema still ends the request it answers, instead of leaving it to time out.
    const answers = typeof loose?.re === "number" ? loose.re : undefined;
    if (loose?.v !== PROTOCOL_VERSION) {
      this.refuse(re, new ProtocolError(`message from ${this.o.peerName} has protocol version ${String(loose?.v)}, expected ${PROTOCOL_VERSION}`, {
        hint: "install the same meshtrain version on the driver and every worker",
      }));
      return;
    }
    const parsed = MessageSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
      const err = new ProtocolError(`invalid message from ${this.o.peerName}: ${where}${issue?.message ?? "unknown problem"}`);
      this.takePending(answers)?.reject(err);
      this.refuse(re, err);
      return;
    }
    if (this.assembly) {
      const was = this.assembly.msg.type;
      this.assembly = null;
      this.refuse(re, new ProtocolError(`${this.o.peerName} sent a new message before the attachments of "${was}" were complete`));
      return;
    }
    const msg = parsed.data;
    const specs = "attachments" in msg ? msg.attachments : [];
    if (specs.length === 0) {
      this.deliver({ msg, attachments: [] });
      return;
    }
    let bytes = 0;
    for (const s of specs) bytes += elementCount(s.shape) * 4;
    if (bytes > this.o.maxAttachmentBytes) {
      this.refuse(re, new ProtocolError(`"${msg.type}" from ${this.o.peerName} announces ${bytes} bytes of tensors, above the limit of ${this.o.maxAttachmentBytes}`));
      return;
    }
    const seq = (msg as { id?: number }).id ?? (msg as { re?: number }).re ?? 0;
    this.assembly = {
      msg,
      seq,
      specs,
      data: specs.map((s) => (this.o.allocate ?? allocate)(s.dtype, elementCount(s.shape))),
      remaining: specs.map((s) => elementCount(s.shape)),
    };
    this.maybeComplete();
  }

  private onBinary(buf: Buffer): void {
    this.liveness.heard();
    const a = this.assembly;
    let frame;
    try {
      frame = decodeFrame(buf);
    } catch (err) {
      if (a) this.assembly = null;
      this.refuse(a ? (a.msg as { id?: number }).id : undefined, err as MeshtrainError);
      return;
    }
    const h = frame.header;
    const problem = !a
      ? "no message announced attachments"
      : h.kind !== "attachment"
        ? `kind "${h.kind}" is not an attachment`
        : h.seq !== a.seq
          ? `it belongs to message ${h.seq}, expected ${a.seq}`
          : h.tensor >= a.specs.length
            ? `attachment index ${h.tensor} is beyond the ${a.specs.length} announced`
            : h.dtype !== a.specs[h.tensor]!.dtype
              ? `dtype ${h.dtype} differs from the announced ${a.specs[h.tensor]!.dtype}`
              : h.total !== a.data[h.tensor]!.length
                ? `total ${h.total} differs from the announced ${a.data[h.tensor]!.length} elements`
                : h.length > a.remaining[h.tensor]!
                  ? "it carries more elements than remain"
                  : null;
    if (problem !== null) {
      this.assembly = null;
      this.refuse(a ? (a.msg as { id?: number }).id : undefined, new ProtocolError(`unexpected binary frame from ${this.o.peerName}: ${problem}`));
      return;
    }
    const asm = a!;
    (asm.data[h.tensor] as Float32Array).set(frame.payload as Float32Array, h.offset);
    asm.remaining[h.tensor]! -= h.length;
    this.maybeComplete();
  }

  private maybeComplete(): void {
    const a = this.assembly;
    if (!a || a.remaining.some((r) => r > 0)) return;
    this.assembly = null;
    this.deliver({ msg: a.msg, attachments: a.data.map((data, i) => ({ data, shape: a.specs[i]!.shape })) });
  }

  private deliver(incoming: Incoming): void {
    const msg = incoming.msg;
    const re = (msg as { re?: number }).re;
    const p = this.takePending(re);
    if (p) {
      if (msg.type === "error") p.reject(fromWireError(msg.error, this.o.details));
      else if (msg.type !== p.expect) p.reject(new ProtocolError(`${this.o.peerName} answered with "${msg.type}", expected "${p.expect}"`, { details: this.o.details }));
      else p.resolve(incoming);
      return;
    }
    if (msg.type === "error" && re === undefined) this.lastWord = fromWireError(msg.error, this.o.details);
    try {
      this.o.onMessage(incoming);
    } catch (err) {
      const id = (msg as { id?: number }).id;
      this.replyError(id, err);
    }
  }
}

