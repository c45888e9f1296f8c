import { ringOverLinks } from "../../sdk/collectives/ring-over-links";
import { RingAllReduce } from "../../sdk/collectives/ring-allreduce";
import { acceptHandshake, offerHandshake } from "../../sdk/transport/handshake";
import type { Link } from "../../sdk/transport/link";
import { dial, listen } from "../../sdk/transport/ws-endpoint";

/**
 * One rank of meshtrain's all-reduce benchmark: the same transport (authenticated WebSocket
 * links), frames and RingAllReduce the workers use, in a process of its own. Prints one JSON
 * line per size with its median time.
 *
 * usage: node ring-rank.js <rank> <world> <basePort> <sizesInBytes,...> <iters> <chunkElements>
 */
const [rank, world, basePort] = process.argv.slice(2, 5).map(Number) as [number, number, number];
const sizes = process.argv[5]!.split(",").map(Number);
const iters = Number(process.argv[6]);
const chunkElements = Number(process.argv[7] ?? 262144);
const token = process.env.MESHTRAIN_TOKEN ?? "benchmark-token-0123456789";
const MAX = 256 * 1024 * 1024;

async function dialWithRetry(url: string): Promise<Link> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await dial(url, { maxFrameBytes: MAX, timeoutMs: 5000 });
    } catch (err) {
      if (attempt > 100) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function main(): Promise<void> {
  const prev = (rank - 1 + world) % world;
  const fromNext = new Promise<Link>((resolve) => {
    void listen({
      host: "127.0.0.1",
      port: basePort + rank,
      maxFrameBytes: MAX,
      maxConnections: 8,
      onLink: (link) => void acceptHandshake(link, { token, timeoutMs: 10_000, server: { version: "bench", pid: process.pid } }).then(() => resolve(link)),
    });
  });
  const fromPrev = await dialWithRetry(`ws://127.0.0.1:${basePort + prev}`);
  await offerHandshake(fromPrev, { token, timeoutMs: 10_000, role: "peer", peer: { session: "bench", rank, link: "ring" }, who: `rank ${prev}` });
  const toNext = await fromNext;
  const { ring, close } = ringOverLinks({
    fromPrev,
    toNext,
    prevName: `rank ${prev}`,
    nextName: `rank ${(rank + 1) % world}`,
    position: rank,
    size: world,
    chunkElements,
    heartbeat: { intervalMs: 1000, timeoutMs: 30_000 },
  });
  let seq = 0;
  const sync = new Float32Array(1);
  const once = (r: RingAllReduce, data: Float32Array): Promise<unknown> => r.run(data, seq++, 60_000);
  for (const bytes of sizes) {
    const data = new Float32Array(bytes / 4).fill(1);
    for (let i = 0; i < 3; i++) await once(ring, data);
    const times: number[] = [];
    for (let i = 0; i < iters; i++) {
      // A one-element all-reduce lines the ranks up, like the peer's barrier.
      await once(ring, sync);
      const start = performance.now();
      await once(ring, data);
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    const median = times.length % 2 ? times[(times.length - 1) / 2]! : (times[times.length / 2 - 1]! + times[times.length / 2]!) / 2;
    process.stdout.write(`${JSON.stringify({ peer: "meshtrain", rank, ranks: world, bytes, seconds: median / 1000 })}\n`);
  }
  // The neighbours may still be finishing the last operation: give them time before closing.
  setTimeout(() => {
    close();
    process.exit(0);
  }, 1000);
}

main().catch((err: unknown) => {
  process.stderr.write(`ring-rank ${rank}: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
