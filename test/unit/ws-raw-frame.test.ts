import assert from "node:assert/strict";
import { test } from "node:test";
import { dial, listen } from "../../sdk/transport/ws-endpoint";
import type { Link } from "../../sdk/transport/link";

/** Every binary message `link` receives, in order, until `count` arrived. */
function received(link: Link, count: number): Promise<Buffer[]> {
  const got: Buffer[] = [];
  return new Promise((resolve) => {
    link.setHandlers({
      text: () => undefined,
      binary: (b) => {
        got.push(Buffer.from(b));
        if (got.length === count) resolve(got);
      },
      pong: () => undefined,
      close: () => resolve(got),
    });
  });
}

// The payload lengths where a WebSocket frame's length field changes form (7 bits, 16, 64).
const SIZES = [0, 93, 94, 125 - 32, 126 - 32, 65535 - 32, 65536 - 32, 3 * 1024 * 1024 + 5];

test("sendParts writes one frame of head and body that ws on the other end reads as sent, both ways, at every length form, in order with ws's own frames", async () => {
  let accepted!: (l: Link) => void;
  const server = new Promise<Link>((resolve) => (accepted = resolve));
  const listener = await listen({ host: "127.0.0.1", port: 0, maxFrameBytes: 16 * 1024 * 1024, maxConnections: 4, onLink: (l) => accepted(l) });
  const client = await dial(listener.url, { maxFrameBytes: 16 * 1024 * 1024, timeoutMs: 5000 });
  const accept = await server;
  try {
    for (const [from, to, side] of [[client, accept, "client (masked)"], [accept, client, "server"]] as const) {
      const expected: Buffer[] = [];
      const arriving = received(to, SIZES.length * 2);
      for (const [i, size] of SIZES.entries()) {
        const head = Buffer.alloc(32, 0xa0 + i);
        const body = new Uint8Array(size).map((_, j) => (j * 7 + i) & 0xff);
        expected.push(Buffer.concat([head, body]));
        void from.sendParts(head, body);
        // A frame ws writes itself right after must arrive after it.
        const own = Buffer.from(`ws frame ${i}`);
        expected.push(own);
        void from.sendBinary(own);
      }
      const got = await arriving;
      assert.equal(got.length, expected.length, side);
      got.forEach((b, i) => assert.ok(b.equals(expected[i]!), `${side}: message ${i} (${expected[i]!.length} bytes) arrived as ${b.length} bytes that differ`));
    }
  } finally {
    client.close();
    await listener.close();
  }
});
