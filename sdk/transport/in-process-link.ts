import { CLOSE, HandlerSlot, type Link, type LinkHandlers } from "./link";

/**
 * Two Links joined in memory, for fast unit tests of everything above the socket. Delivery is
 * asynchronous and ordered, like a socket; pings are answered with pongs.
 */
class InProcessLink implements Link {
  other!: InProcessLink;
  private readonly slot = new HandlerSlot();
  private queue: Array<() => void> = [];
  private draining = false;
  closed = false;
  readonly bufferedBytes = 0;

  constructor(readonly address: string) {}

  setHandlers(handlers: LinkHandlers | null): void {
    this.slot.set(handlers);
  }

  sendText(text: string): void {
    if (this.closed) return;
    this.other.deliver(() => this.other.slot.emit((h) => h.text(text)));
  }

  sendBinary(data: Buffer): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`link to ${this.address} is closed`));
    const copy = Buffer.from(data);
    this.other.deliver(() => this.other.slot.emit((h) => h.binary(copy)));
    return Promise.resolve();
  }

  sendParts(head: Buffer, body: Uint8Array): Promise<void> {
    return this.sendBinary(Buffer.concat([head, body]));
  }

  ping(): void {
    if (this.closed) return;
    this.other.deliver(() => this.deliver(() => this.slot.emit((h) => h.pong())));
  }

  close(code: number = CLOSE.normal, reason = ""): void {
    if (this.closed) return;
    this.closed = true;
    this.deliver(() => this.slot.emit((h) => h.close(code, reason)));
    if (!this.other.closed) {
      this.other.closed = true;
      this.other.deliver(() => this.other.slot.emit((h) => h.close(code, reason)));
    }
  }

  terminate(): void {
    this.close(1006, "terminated");
  }

  private deliver(fn: () => void): void {
    this.queue.push(fn);
    if (this.draining) return;
    this.draining = true;
    setImmediate(() => {
      this.draining = false;
      const batch = this.queue;
      this.queue = [];
      for (const f of batch) f();
    });
  }
}

export function inProcessLinkPair(nameA = "in-process:a", nameB = "in-process:b"): [Link, Link] {
  const a = new InProcessLink(nameB);
  const b = new InProcessLink(nameA);
  a.other = b;
  b.other = a;
  return [a, b];
}
