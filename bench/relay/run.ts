import { spawn, type ChildProcess } from "node:child_process";
import * as path from "node:path";
import { fmt, machine, median, pinnedEnv, QUICK, writeResults, type Json } from "../common";
import type { Link } from "../../sdk/transport/link";
import { dial } from "../../sdk/transport/ws-endpoint";

/**
 * What the driver's relay costs a link to a browser tab: the same echo end reached directly (as a
 * Node worker is) and through the relay (as a tab is: two WebSocket hops and a pass through the
 * driver's process), side by side in one run, each end in a process of its own. Round trips of a
 * small frame (a step's control message) and of 1 MiB frames (an all-reduce's chunks), medians of
 * interleaved rounds. Loopback: the relay's own cost, not a network's.
 *
 * usage: npm run bench:relay [-- --quick]
 */

const ROUNDS = QUICK ? 1 : 5;
const SMALL = { bytes: 64, count: QUICK ? 50 : 400 };
const LARGE = { bytes: 2 ** 20, count: QUICK ? 8 : 64 };
const TOKEN = "relay-bench-token-0123456789abcdef";

function start(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, { env: pinnedEnv(1, { MESHTRAIN_TOKEN: TOKEN }), stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve({ child, url: (JSON.parse(line) as { url: string }).url });
    });
    child.once("exit", (code) => reject(new Error(`${path.basename(args[0]!)} exited ${code}`)));
  });
}

/** Sends `count` frames of `bytes`, one at a time, each after the last one's echo: ms per round trip. */
async function roundTrips(link: Link, bytes: number, count: number): Promise<number> {
  const frame = Buffer.alloc(bytes, 7);
  let resolveOne: () => void = () => undefined;
  link.setHandlers({ text: () => undefined, binary: () => resolveOne(), pong: () => undefined, close: () => undefined });
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const back = new Promise<void>((r) => (resolveOne = r));
    await link.sendBinary(frame);
    await back;
  }
  return (performance.now() - t0) / count;
}

async function measure(url: string): Promise<{ smallMs: number; largeMs: number }> {
  const link = await dial(url, { maxFrameBytes: 64 * 2 ** 20, timeoutMs: 10_000 });
  try {
    await roundTrips(link, SMALL.bytes, 10);
    return { smallMs: await roundTrips(link, SMALL.bytes, SMALL.count), largeMs: await roundTrips(link, LARGE.bytes, LARGE.count) };
  } finally {
    link.close();
  }
}

async function main(): Promise<void> {
  const driver = await start([path.join(__dirname, "driver.js")]);
  const direct = await start([path.join(__dirname, "echo.js"), "listen"]);
  const relayed = await start([path.join(__dirname, "echo.js"), "relay", driver.url]);
  const runs: Record<"direct" | "relay", Array<{ smallMs: number; largeMs: number }>> = { direct: [], relay: [] };
  try {
    for (let r = 0; r < ROUNDS; r++) {
      runs.direct.push(await measure(direct.url));
      runs.relay.push(await measure(relayed.url));
    }
  } finally {
    for (const p of [driver, direct, relayed]) p.child.kill("SIGKILL");
  }
  const row = (k: "direct" | "relay"): Json => {
    const small = median(runs[k].map((x) => x.smallMs));
    const large = median(runs[k].map((x) => x.largeMs));
    return { path: k, smallRoundTripMs: small, largeRoundTripMs: large, largeMiBPerSecond: (2 * LARGE.bytes) / 2 ** 20 / (large / 1000), runs: runs[k] };
  };
  const [d, r] = [row("direct"), row("relay")] as Array<Json & { smallRoundTripMs: number; largeRoundTripMs: number; largeMiBPerSecond: number }>;
  const md = [
    "### A tab's links: the driver's relay beside a direct link",
    "",
    `\`npm run bench:relay\` (${QUICK ? "quick, 1 round" : `medians of ${ROUNDS} interleaved rounds`}, ${String(machine().cpu)}, loopback): one echo end reached directly, as a Node worker is, and through the driver's relay, as a browser tab is (two WebSocket hops and a pass through the driver's process); each end a process of its own.`,
    "",
    "| path | 64 B round trip | 1 MiB round trip | 1 MiB frames, both ways |",
    "|---|---|---|---|",
    `| direct | ${fmt(d.smallRoundTripMs, 3)} ms | ${fmt(d.largeRoundTripMs)} ms | ${fmt(d.largeMiBPerSecond, 0)} MiB/s |`,
    `| relay | ${fmt(r.smallRoundTripMs, 3)} ms | ${fmt(r.largeRoundTripMs)} ms | ${fmt(r.largeMiBPerSecond, 0)} MiB/s |`,
    `| relay / direct | ${fmt(r.smallRoundTripMs / d.smallRoundTripMs)}x | ${fmt(r.largeRoundTripMs / d.largeRoundTripMs)}x | ${fmt(r.largeMiBPerSecond / d.largeMiBPerSecond)}x |`,
  ].join("\n");
  writeResults("relay", { machine: machine(), quick: QUICK, rows: [d, r] }, md);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
