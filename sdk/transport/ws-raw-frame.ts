import type { Socket } from "node:net";
import type { WebSocket } from "ws";

/**
 * One binary WebSocket frame whose payload is `head` then `body`, written to the socket under ws
 * without copying `body` (the kernel copies it once, as it copies any write).
 *
 * ws frames one buffer per message, so a 32-byte frame header in front of a chunk of a tensor
 * meant assembling both in a new buffer: a copy of every byte sent. Two fragments would not copy
 * here but make the receiver join them, a copy there. Corked writes of [ws's header + ours, body]
 * are the frame ws would have written. Our peers mask with a zero key (ws-endpoint), so the
 * payload goes as it is; a client's frame carries the mask bit and the four zero bytes.
 *
 * ws writes every frame synchronously while it is not compressing or reading a Blob (we do
 * neither), so a frame written here never lands inside one of ws's.
 */
export function writeRawFrame(
  ws: WebSocket,
  masked: boolean,
  head: Buffer,
  body: Uint8Array,
  done: (err?: Error | null) => void,
): void {
  const internals = ws as unknown as { _socket: Socket; _sender: { _state: number } };
  if (internals._sender._state !== 0)
    throw new Error("ws's sender is busy (compressing or reading a Blob): a raw frame would interleave with its frame");
  const length = head.length + body.byteLength;
  const lengthBytes = length >= 65536 ? 8 : length > 125 ? 2 : 0;
  const prefix = Buffer.allocUnsafe(2 + lengthBytes + (masked ? 4 : 0) + head.length);
  prefix[0] = 0x82; // FIN, binary
  prefix[1] = (masked ? 0x80 : 0) | (lengthBytes === 8 ? 127 : lengthBytes === 2 ? 126 : length);
  if (lengthBytes === 2) prefix.writeUInt16BE(length, 2);
  if (lengthBytes === 8) prefix.writeBigUInt64BE(BigInt(length), 2);
  let at = 2 + lengthBytes;
  if (masked) at = prefix.writeUInt32BE(0, at);
  head.copy(prefix, at);
  const socket = internals._socket;
  socket.cork();
  socket.write(prefix);
  socket.write(body, done);
  socket.uncork();
}
