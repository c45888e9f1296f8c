import { HandlerSlot, type LinkHandlers } from "./link";

/** What a Link needs of a WebSocket, in Node's `ws` and in a browser alike. */
export interface SocketLike {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string): void;
}

/** WebSocket.OPEN in both APIs. */
const OPEN = 1;

/** The text frames a browser's heartbeat uses (it cannot send WebSocket pings): "1" asks, "2" answers. */
export const HEARTBEAT = { ping: "1", pong: "2" } as const;

/**
 * What a Link over a WebSocket does the same whichever side of the wire it is on: its owner's
 * handlers, its state, text frames out, and text frames in, a browser's heartbeat answered here.
 */
export abstract class SocketLink {
  protected readonly slot = new HandlerSlot();
  protected closeSeen = false;

  constructor(
    private readonly socket: SocketLike,
    readonly address: string,
  ) {}

  protected get open(): boolean {
    return this.socket.readyState === OPEN;
  }

  get closed(): boolean {
    return this.closeSeen || !this.open;
  }

  get bufferedBytes(): number {
    return this.socket.bufferedAmount;
  }

  setHandlers(handlers: LinkHandlers | null): void {
    this.slot.set(handlers);
  }

  sendText(text: string): void {
    if (this.open) this.socket.send(text);
  }

  /** A text frame to the owner; a heartbeat ("1") is answered ("2") and, like its answer, counts as a sign of life. */
  protected deliverText(text: string): void {
    if (text === HEARTBEAT.ping) {
      this.sendText(HEARTBEAT.pong);
      this.slot.emit((h) => h.pong());
    } else if (text === HEARTBEAT.pong) this.slot.emit((h) => h.pong());
    else this.slot.emit((h) => h.text(text));
  }

  protected closedBy(code: number, reason: string): void {
    this.closeSeen = true;
    this.slot.emit((h) => h.close(code, reason));
  }
}
