import type { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import type { WebSocket } from "ws";
import { FrameReader } from "./frame-reader";

/** Bytes one socket read can return into the reused buffer. */
const READ_BYTES = 256 * 1024;

interface ReceiverInternals extends EventEmitter {
  _state: number;
  _buffers: Buffer[];
  _bufferedBytes: number;
}

interface SocketInternals extends Socket {
  _handle: { useUserBuffer?(buf: Uint8Array): void } | null;
}

/**
 * From now on reads this ws connection's frames with a FrameReader, out of one socket buffer
 * kept for the connection's life: its binary frames go to `binary`, borrowed.
 *
 * Why: every socket read makes a new ArrayBuffer, and ws joins a frame that spans reads into
 * another. On a communication thread passing a ring's megabytes, those buffers add up to V8's
 * external-memory limit (64 MiB over the level after the last full collection) every few dozen
 * steps, and each time V8 runs a full collection (`--trace-gc`: "external memory pressure"),
 * a slow step. Read into kept buffers, the ring's bytes allocate nothing.
 *
 * ws keeps the rest: text, ping, pong and close frames are handed to its own handlers, as its
 * receiver would hand them. Changes nothing where that cannot be done: "never" for a TLS socket
 * (its reads are decrypted above the handle) or a Node.js without user read buffers; "later"
 * while ws has a frame half read (the caller tries again after ws's next event).
 */
export function readFramesRaw(
  ws: WebSocket,
  maxPayload: number,
  binary: (payload: Buffer) => void,
  broken: (why: string, code: number) => void,
): "lent" | "later" | "never" {
  const internals = ws as unknown as { _receiver?: ReceiverInternals; _socket?: SocketInternals };
  const receiver = internals._receiver;
  const socket = internals._socket;
  if (
    !receiver ||
    !socket ||
    socket.constructor.name !== "Socket" ||
    typeof socket._handle?.useUserBuffer !== "function"
  )
    return "never";
  const symbols = Object.getOwnPropertySymbols(socket);
  const kBuffer = symbols.find((s) => s.description === "kBuffer");
  const kBufferCb = symbols.find((s) => s.description === "kBufferCb");
  if (!kBuffer || !kBufferCb) return "never";
  if (receiver._state !== 0 || socket.readableLength > 0) return "later";
  const reader = new FrameReader(maxPayload, {
    binary,
    control: (opcode, payload) => {
      if (opcode === 0x1) receiver.emit("message", payload, false);
      else if (opcode === 0x9) receiver.emit("ping", payload);
      else if (opcode === 0xa) receiver.emit("pong", payload);
      else if (payload.length === 0) receiver.emit("conclude", 1005, payload);
      else if (payload.length === 1 || !sendableCode(payload.readUInt16BE(0)))
        broken(`a close frame with no valid code (${payload.length} bytes)`, 1002);
      else receiver.emit("conclude", payload.readUInt16BE(0), payload.subarray(2));
    },
    broken,
  });
  const held = receiver._buffers.splice(0);
  receiver._bufferedBytes = 0;
  socket.removeAllListeners("data");
  const buf = Buffer.allocUnsafeSlow(READ_BYTES);
  const slots = socket as unknown as Record<symbol, unknown>;
  slots[kBuffer] = buf;
  slots[kBufferCb] = (n: number): void => reader.push(buf.subarray(0, n));
  socket._handle!.useUserBuffer!(buf);
  for (const chunk of held) reader.push(chunk);
  // ws pauses the socket while its receiver is busy; nothing here is.
  socket.resume();
  return "lent";
}

/** Close codes a peer may send (RFC 6455 section 7.4). */
function sendableCode(code: number): boolean {
  return (
    (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999)
  );
}
