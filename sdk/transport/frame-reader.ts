/** What a FrameReader hands on, frame by frame. */
export interface FrameSink {
  /** A binary frame's payload, borrowed: its memory is reused once the call returns. */
  binary(payload: Buffer): void;
  /** A text, ping, pong or close frame (opcode 1, 9, 10, 8): its payload is the receiver's own. */
  control(opcode: number, payload: Buffer): void;
  /** The bytes broke RFC 6455 or our use of it; nothing more is read. */
  broken(why: string, code: number): void;
}

const OP = { text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

/**
 * Parses WebSocket frames (RFC 6455 section 5.2) from a stream of chunks into one buffer kept
 * from frame to frame, so reading a ring's chunks allocates nothing (ws's receiver joins every
 * frame that spans socket reads into a new buffer). Our peers never fragment a message nor use
 * extensions, so a fragment or a reserved bit is refused.
 */
export class FrameReader {
  private readonly head = Buffer.alloc(14);
  private headHave = 0;
  private opcode = 0;
  private masked = false;
  private length = -1;
  /** Binary payloads land here, grown to the largest frame seen and then kept. */
  private frame = Buffer.alloc(0);
  /** Where the current frame's payload goes: `frame`, or a control frame's own buffer. */
  private target = this.frame;
  private have = 0;
  private stopped = false;

  constructor(
    private readonly maxPayload: number,
    private readonly sink: FrameSink,
  ) {}

  push(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.length && !this.stopped) {
      if (this.length < 0) at = this.readHead(chunk, at);
      else at = this.readPayload(chunk, at);
    }
  }

  private readHead(chunk: Uint8Array, at: number): number {
    const need = this.headBytes();
    const take = Math.min(need - this.headHave, chunk.length - at);
    this.head.set(chunk.subarray(at, at + take), this.headHave);
    this.headHave += take;
    // Two bytes in, the length may say that more header bytes follow.
    if (this.headHave < this.headBytes()) return at + take;
    this.startFrame();
    return at + take;
  }

  /** How many header bytes the ones read so far say there are. */
  private headBytes(): number {
    if (this.headHave < 2) return 2;
    const short = this.head[1] & 0x7f;
    return 2 + (short === 126 ? 2 : short === 127 ? 8 : 0) + (this.head[1] & 0x80 ? 4 : 0);
  }

  private startFrame(): void {
    const b0 = this.head[0];
    const short = this.head[1] & 0x7f;
    this.opcode = b0 & 0x0f;
    this.masked = (this.head[1] & 0x80) !== 0;
    const length =
      short === 126 ? this.head.readUInt16BE(2) : short === 127 ? Number(this.head.readBigUInt64BE(2)) : short;
    if ((b0 & 0x70) !== 0) return this.stop("a frame with a reserved bit set (no extension was agreed)", 1002);
    if ((b0 & 0x80) === 0 || this.opcode === 0)
      return this.stop("a fragmented message (meshtrain's peers send every message in one frame)", 1002);
    const control = this.opcode >= 0x8;
    if (!control && this.opcode !== OP.text && this.opcode !== OP.binary)
      return this.stop(`a frame with unknown opcode ${this.opcode}`, 1002);
    if (control && this.opcode !== OP.close && this.opcode !== OP.ping && this.opcode !== OP.pong)
      return this.stop(`a frame with unknown opcode ${this.opcode}`, 1002);
    if (control && length > 125) return this.stop(`a control frame of ${length} bytes (at most 125)`, 1002);
    if (length > this.maxPayload) return this.stop(`a frame of ${length} bytes (at most ${this.maxPayload})`, 1009);
    this.length = length;
    this.have = 0;
    if (this.opcode === OP.binary) {
      if (this.frame.length < length) this.frame = Buffer.allocUnsafeSlow(Math.max(length, 2 * this.frame.length));
      this.target = this.frame;
    } else this.target = Buffer.alloc(length);
    if (length === 0) this.endFrame();
  }

  private readPayload(chunk: Uint8Array, at: number): number {
    const take = Math.min(this.length - this.have, chunk.length - at);
    this.target.set(chunk.subarray(at, at + take), this.have);
    this.have += take;
    if (this.have === this.length) this.endFrame();
    return at + take;
  }

  private endFrame(): void {
    const payload = this.target.subarray(0, this.length);
    if (this.masked) {
      const key = this.head.subarray(this.headHave - 4, this.headHave);
      for (let i = 0; i < payload.length; i++) payload[i] ^= key[i & 3];
    }
    const opcode = this.opcode;
    this.headHave = 0;
    this.length = -1;
    if (opcode === OP.binary) this.sink.binary(payload);
    else this.sink.control(opcode, payload);
  }

  private stop(why: string, code: number): void {
    this.stopped = true;
    this.sink.broken(why, code);
  }
}
