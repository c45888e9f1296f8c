/**
 * A Link is one message-oriented connection (a WebSocket, or an in-process pair in unit tests).
 * Everything above transport/ talks through Links, never through sockets.
 */
export interface LinkHandlers {
  text(data: string): void;
  binary(data: Buffer): void;
  close(code: number, reason: string): void;
  /** Any sign of life that is not a message (a pong). */
  pong(): void;
}

export interface Link {
  /** Where the other end is, for messages: "ws://127.0.0.1:40123" or "127.0.0.1:51234". */
  readonly address: string;
  readonly closed: boolean;
  /** Bytes queued but not yet handed to the operating system. */
  readonly bufferedBytes: number;
  sendText(text: string): void;
  /** Resolves once the bytes were handed to the OS; rejects if the link closed first. */
  sendBinary(data: Buffer): Promise<void>;
  /**
   * Sends `head` then `body` as one binary message without copying `body`: its memory must not
   * change until the promise resolves.
   */
  sendParts(head: Buffer, body: Uint8Array): Promise<void>;
  ping(): void;
  /**
   * From now on, binary frames are read without allocating and handed to the handler borrowed:
   * their memory is reused once `binary` returns, so a handler that keeps one copies it. For links
   * that carry megabytes a step. False where it is not in place yet (a link that cannot goes on as
   * before; a WebSocket with a frame half read starts at its next frame).
   */
  lendBinary?(): boolean;
  /**
   * Replaces every handler at once: a Link has one owner at a time (handshake, then channel).
   * `null` holds events until the next owner sets its handlers, so nothing is lost in between.
   */
  setHandlers(handlers: LinkHandlers | null): void;
  close(code?: number, reason?: string): void;
  /** Drops the connection without a closing handshake. */
  terminate(): void;
}

/** Delivers events to the current owner, or keeps them, in order, until there is one. */
export class HandlerSlot {
  private handlers: LinkHandlers | null = null;
  private held: Array<(h: LinkHandlers) => void> = [];

  set(handlers: LinkHandlers | null): void {
    this.handlers = handlers;
    while (this.handlers !== null && this.held.length > 0) {
      const next = this.held.shift()!;
      next(this.handlers);
    }
  }

  /** A borrowed binary frame (Link.lendBinary): one held for a later owner is copied first. */
  emitBorrowed(data: Buffer): void {
    if (this.handlers !== null && this.held.length === 0) this.handlers.binary(data);
    else {
      const copy = Buffer.from(data);
      this.held.push((h) => h.binary(copy));
    }
  }

  emit(event: (h: LinkHandlers) => void): void {
    if (this.handlers !== null && this.held.length === 0) event(this.handlers);
    else this.held.push(event);
  }
}

/** WebSocket close codes meshtrain uses (RFC 6455 section 7.4.1 plus the private range). */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  protocolError: 1002,
  policy: 1008,
  tooBig: 1009,
  internal: 1011,
  authFailed: 4001,
  busy: 4002,
  handshakeTimeout: 4003,
  silent: 4004,
  shutdown: 4005,
} as const;
