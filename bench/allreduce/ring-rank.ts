import type { AllReducer } from "../../sdk/collectives/all-reducer";
import { nativeDataPlane } from "../../sdk/collectives/native-plane";
import { connectDataRing } from "../../sdk/collectives/data-ring-setup";
import { NativeRing } from "../../sdk/collectives/native-ring";
import { ringOverLinks, watchedRing, type RingLinks } from "../../sdk/collectives/ring-over-links";
import { acceptHandshake, offerHandshake } from "../../sdk/transport/handshake";
import type { Link } from "../../sdk/transport/link";
import { dial, listen } from "../../sdk/transport/ws-endpoint";

/**
 * One rank of meshtrain's all-reduce benchmark: the same links and ring the workers use, in a
 * process of its own, over the native data plane (TCP, reduced in C) or the WebSocket path.
 * Prints one JSON line per size with its median time.
 *
 * usage: node ring-rank.js <rank> <world> <basePort> <sizesInBytes,...> <iters> <chunkElements> <native|websocket>
 */
const [rank, world, basePort] = process.argv.slice(2, 5).map(Number) as [number, number, number];
const sizes = process.argv[5]!.split(",").map(Number);
const iters = Number(process.argv[6]);
const chunkElements = Number(process.argv[7] ?? 262144);
const path = process.argv[8] === "websocket" ? "websocket" : "native";
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

async function nativeRing(links: RingLinks, prev: number, next: number): Promise<{ ring: AllReducer; close(): void }> {
  const plane = nativeDataPlane();
  if (!plane.ok) throw new Error(`no native data plane: ${plane.reason}`);
  const ring = await connectDataRing({ ...links, addon: plane.addon, listenHost: "127.0.0.1", prevHost: "127.0.0.1", rank, prevRank: prev, nextRank: next, token, timeoutMs: 10_000 });
  return watchedRing(links, new NativeRing(plane.addon, ring));
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
  const next = (rank + 1) % world;
  const links: RingLinks = {
    fromPrev,
    toNext,
    prevName: `rank ${prev}`,
    nextName: `rank ${next}`,
    position: rank,
    size: world,
    chunkElements,
    heartbeat: { intervalMs: 1000, timeoutMs: 30_000 },
  };
  const { ring, close } = path === "websocket" ? ringOverLinks(links) : await nativeRing(links, prev, next);
  let seq = 0;
  const sync = new Float32Array(1);
  const once = (r: AllReducer, data: Float32Array): Promise<unknown> => r.run(data, seq++, 60_000);
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
    process.stdout.write(`${JSON.stringify({ peer: path === "native" ? "meshtrain" : "meshtrain-ws", rank, ranks: world, bytes, seconds: median / 1000 })}\n`);
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
