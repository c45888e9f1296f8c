import * as net from "node:net";

/**
 * The raw-TCP reference of the all-reduce benchmark: the bytes a ring all-reduce moves
 * (2(N-1)/N of the buffer out to the next rank while the same comes in from the previous one),
 * over plain sockets from Node, with no framing, no reduction and no copies: the ceiling any
 * Node transport on this machine can reach.
 *
 * usage: node tcp-rank.js <rank> <world> <basePort> <sizesInBytes,...> <iters>
 */
const [rank, world, basePort] = process.argv.slice(2, 5).map(Number) as [number, number, number];
const sizes = process.argv[5]!.split(",").map(Number);
const iters = Number(process.argv[6]);

function acceptNext(): Promise<net.Socket> {
  return new Promise((resolve) => {
    const server = net.createServer((s) => {
      server.close();
      resolve(s);
    });
    server.listen(basePort + rank, "127.0.0.1");
  });
}

function dialPrev(): Promise<net.Socket> {
  return new Promise((resolve) => {
    const attempt = (): void => {
      const s = net.connect(basePort + ((rank - 1 + world) % world), "127.0.0.1");
      s.once("connect", () => resolve(s));
      s.once("error", () => setTimeout(attempt, 50));
    };
    attempt();
  });
}

async function main(): Promise<void> {
  const [toNext, fromPrev] = await Promise.all([acceptNext(), dialPrev()]);
  toNext.setNoDelay(true);
  // Counted cumulatively: a neighbour that starts the next exchange early must not be
  // mistaken for the rest of this one.
  let received = 0;
  let target = 0;
  let done: (() => void) | null = null;
  fromPrev.on("data", (b: Buffer) => {
    received += b.length;
    if (done && received >= target) {
      const d = done;
      done = null;
      d();
    }
  });
  const chunk = Buffer.alloc(1024 * 1024, 1);
  const exchange = (bytes: number): Promise<void> =>
    new Promise((resolve) => {
      target += bytes;
      if (received >= target) resolve();
      else done = resolve;
      for (let sent = 0; sent < bytes; sent += chunk.length) toNext.write(chunk.subarray(0, Math.min(chunk.length, bytes - sent)));
    });
  for (const size of sizes) {
    const bytes = Math.round((2 * (world - 1) * size) / world);
    for (let i = 0; i < 3; i++) await exchange(bytes);
    const times: number[] = [];
    for (let i = 0; i < iters; i++) {
      await exchange(8);
      const start = performance.now();
      await exchange(bytes);
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    const median = times.length % 2 ? times[(times.length - 1) / 2]! : (times[times.length / 2 - 1]! + times[times.length / 2]!) / 2;
    process.stdout.write(`${JSON.stringify({ peer: "raw-tcp", rank, ranks: world, bytes: size, seconds: median / 1000 })}\n`);
  }
  setTimeout(() => process.exit(0), 1000);
}

main().catch((err: unknown) => {
  process.stderr.write(`tcp-rank ${rank}: ${String(err)}\n`);
  process.exit(1);
});
