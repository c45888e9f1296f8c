/**
 * Copies of lent frames (Link.lendBinary) that the ring keeps for later, in buffers it uses again
 * once they are done with. In a ring, the position that enters a step last finds the previous
 * one's first chunks there already: on the 11.4M MLP that is a whole segment (22.8 MB on two
 * workers) a step. New buffers for them would be the allocations that reading into kept
 * buffers removed (see transport/ws-raw-read.ts). What is kept is bounded by what one step can
 * send early: the ring's owner already holds that much.
 */
export class FrameCopies {
  private spare: Buffer[] = [];

  copy(bytes: Uint8Array): Buffer {
    const at = this.spare.findIndex((b) => b.length >= bytes.length);
    const buf = at >= 0 ? this.spare.splice(at, 1)[0]! : Buffer.allocUnsafeSlow(bytes.length);
    buf.set(bytes);
    return buf.subarray(0, bytes.length);
  }

  /** `copy` came from copy() and is not read again. */
  release(copy: Buffer): void {
    this.spare.push(Buffer.from(copy.buffer, 0, copy.buffer.byteLength));
  }
}
