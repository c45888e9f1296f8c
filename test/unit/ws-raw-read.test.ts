import assert from "node:assert/strict";
import { test } from "node:test";
import { dial, listen } from "../../sdk/transport/ws-endpoint";
import type { Link } from "../../sdk/transport/link";

type Event = ["binary", Buffer] | ["text", string] | ["pong"] | ["close", number, string];

/** What `link` hears, binary frames copied (a lent frame's memory is reused). */
function hear(link: Link): Event[] {
  const events: Event[] = [];
  link.setHandlers({
    text: (t) => events.push(["text", t]),
    binary: (b) => events.push(["binary", Buffer.from(b)]),
    pong: () => events.push(["pong"]),
    close: (code, reason) => events.push(["close", code, reason]),
  });
  return events;
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`waited 10 s for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function pair(): Promise<{ client: Link; accept: Link; close(): Promise<void> }> {
  let accepted!: (l: Link) => void;
  const server = new Promise<Link>((resolve) => (accepted = resolve));
  const listener = await listen({ host: "127.0.0.1", port: 0, maxFrameBytes: 16 * 1024 * 1024, maxConnections: 4, onLink: (l) => accepted(l) });
  const client = await dial(listener.url, { maxFrameBytes: 16 * 1024 * 1024, timeoutMs: 5000 });
  return { client, accept: await server, close: () => listener.close() };
}

const SIZES = [0, 93, 94, 65535 - 32, 65536 - 32, 3 * 1024 * 1024 + 5];

test("a link that lends its binary frames still hears every frame in order, both ways: ring chunks, ws's own frames, text, pings answered, and the close", async () => {
  const { client, accept, close } = await pair();
  try {
    for (const [from, to, side] of [[client, accept, "server reading"], [accept, client, "client reading"]] as const) {
      const events = hear(to);
      assert.equal(to.lendBinary!(), true, side);
      const expected: Event[] = [];
      for (const [i, size] of SIZES.entries()) {
        const head = Buffer.alloc(32, 0xa0 + i);
        const body = new Uint8Array(size).map((_, j) => (j * 7 + i) & 0xff);
        expected.push(["binary", Buffer.concat([head, body])]);
        void from.sendParts(head, body);
        expected.push(["text", `text ${i}`]);
        from.sendText(`text ${i}`);
      }
      await until(`${side}: ${expected.length} frames`, () => events.length >= expected.length);
      assert.deepEqual(events, expected, side);
      // Pings sent to the lending end are answered by ws, as before.
      const back = hear(from);
      from.ping();
      await until(`${side}: the pong`, () => back.length > 0);
      assert.deepEqual(back, [["pong"]], side);
      to.ping();
      await until(`${side}: the lending end's pong`, () => events.length > expected.length);
      assert.deepEqual(events.at(-1), ["pong"], side);
    }
    const events = hear(client);
    accept.close(4005, "bye");
    await until("the close", () => events.length > 0);
    assert.deepEqual(events, [["close", 4005, "bye"]]);
  } finally {
    client.terminate();
    await close();
  }
});

test("a lending link that reads a frame meshtrain's peers never send closes with 1002 and says what the frame was", async () => {
  const { client, accept, close } = await pair();
  try {
    const events = hear(client);
    assert.equal(client.lendBinary!(), true);
    const far = hear(accept);
    // A fragment: FIN clear, binary, 1 byte, written under ws.
    (accept as unknown as { ws: { _socket: { write(b: Buffer): void } } }).ws._socket.write(Buffer.from([0x02, 0x01, 0x07]));
    await until("the close", () => events.length > 0 && far.length > 0);
    assert.equal(events[0]![0], "close");
    assert.equal(events[0]![1], 1002);
    assert.match(String(events[0]![2]), /sent a fragmented message/);
    assert.equal(far[0]![0], "close");
    assert.equal(far[0]![1], 1002);
  } finally {
    client.terminate();
    await close();
  }
});

test("a lending link that reads a frame over its limit closes with 1009, though its owner closes it normally when told", async () => {
  let accepted!: (l: Link) => void;
  const server = new Promise<Link>((resolve) => (accepted = resolve));
  const listener = await listen({ host: "127.0.0.1", port: 0, maxFrameBytes: 65_536, maxConnections: 4, onLink: (l) => accepted(l) });
  const client = await dial(listener.url, { maxFrameBytes: 16 * 1024 * 1024, timeoutMs: 5000 });
  const accept = await server;
  try {
    // As a worker's channel does: told the link closed, it closes it (1000).
    accept.setHandlers({ text: () => undefined, binary: () => undefined, pong: () => undefined, close: () => accept.close() });
    assert.equal(accept.lendBinary!(), true);
    const far = hear(client);
    void client.sendBinary(Buffer.alloc(100_000));
    await until("the close", () => far.length > 0);
    assert.equal(far[0]![0], "close");
    assert.equal(far[0]![1], 1009, "the sender hears why its frame was refused");
  } finally {
    client.terminate();
    await listener.close();
  }
});
