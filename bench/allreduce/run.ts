import * as path from "node:path";
import { nativeDataPlane } from "../../sdk/collectives/native-plane";
import { cpuName, fmt, machine, median, PEERS, pinnedEnv, ports, PYTHON, QUICK, runRanks, torchMissing, writeResults, type Json } from "../common";

/**
 * All-reduce bus bandwidth: meshtrain's ring over its native data plane and over its WebSocket
 * path, PyTorch's gloo, and the raw-TCP ceiling of a Node transport (bytes only), interleaved,
 * medians of several rounds.
 * busbw = bytes / time x 2(N-1)/N, the definition NCCL's tests use.
 */

const MiB = 1024 * 1024;
const SIZES = QUICK ? [1 * MiB] : [1 * MiB, 16 * MiB, 64 * MiB];
const RANKS = QUICK ? [2] : [2, 4];
const ROUNDS = QUICK ? 1 : 3;
const ITERS = QUICK ? 3 : 7;
const here = __dirname;

type Peer = "meshtrain" | "meshtrain-ws" | "gloo" | "raw-tcp";

function job(peer: Peer, n: number): Promise<Json[]> {
  const base = ports(n);
  const sizes = SIZES.join(",");
  return runRanks(n, (r) => {
    switch (peer) {
      case "meshtrain":
      case "meshtrain-ws":
        return [process.execPath, [path.join(here, "ring-rank.js"), String(r), String(n), String(base), sizes, String(ITERS), "262144", peer === "meshtrain" ? "native" : "websocket"], pinnedEnv()];
      case "raw-tcp":
        return [process.execPath, [path.join(here, "tcp-rank.js"), String(r), String(n), String(base), sizes, String(ITERS)], pinnedEnv()];
      case "gloo":
        return [PYTHON, [path.join(PEERS, "torch_allreduce.py"), "--rank", String(r), "--world", String(n), "--port", String(base), "--sizes", sizes, "--iters", String(ITERS)], pinnedEnv()];
    }
  });
}

async function main(): Promise<void> {
  const missing = torchMissing();
  const plane = nativeDataPlane();
  const peers: Peer[] = [...(plane.ok ? (["meshtrain"] as const) : []), "meshtrain-ws", ...(missing ? [] : (["gloo"] as const)), "raw-tcp"];
  // seconds[peer][n][bytes] = one value per round: the slowest rank's median
  const seconds: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const n of RANKS) {
      for (const peer of peers) {
        const lines = await job(peer, n);
        for (const bytes of SIZES) {
          const worst = Math.max(...lines.filter((l) => l.bytes === bytes).map((l) => l.seconds as number));
          (seconds[`${peer}/${n}/${bytes}`] ??= []).push(worst);
        }
        process.stderr.write(`round ${round + 1}/${ROUNDS}: ${peer} with ${n} ranks done\n`);
      }
    }
  }
  const rows: Json[] = [];
  const lines = [
    `| ranks | size | meshtrain native busbw GB/s | meshtrain WebSocket busbw GB/s | gloo busbw GB/s | raw Node TCP busbw GB/s | native / gloo | target |`,
    `|---|---|---|---|---|---|---|---|`,
  ];
  for (const n of RANKS) {
    for (const bytes of SIZES) {
      const bus = (peer: Peer): number => {
        const s = median(seconds[`${peer}/${n}/${bytes}`] ?? []);
        return ((bytes / s) * (2 * (n - 1))) / n / 1e9;
      };
      const m = plane.ok ? bus("meshtrain") : NaN;
      const w = bus("meshtrain-ws");
      const g = missing ? NaN : bus("gloo");
      const t = bus("raw-tcp");
      const target = 1.0;
      const s = (peer: Peer): number[] | undefined => seconds[`${peer}/${n}/${bytes}`];
      rows.push({ ranks: n, bytes, meshtrainBusbw: m, websocketBusbw: w, glooBusbw: g, rawTcpBusbw: t, ratio: m / g, target, seconds: { meshtrain: s("meshtrain"), websocket: s("meshtrain-ws"), gloo: s("gloo"), rawTcp: s("raw-tcp") } });
      const verdict = Number.isFinite(g) && Number.isFinite(m) ? (m / g >= target ? `>= ${target}x: reached` : `>= ${target}x: not reached`) : "-";
      lines.push(`| ${n} | ${bytes / MiB} MiB | ${fmt(m)} | ${fmt(w)} | ${fmt(g)} | ${fmt(t)} | ${fmt(m / g)} | ${verdict} |`);
    }
  }
  const md = [
    `### All-reduce bus bandwidth, over loopback (medians of ${ROUNDS} interleaved rounds x ${ITERS} operations)`,
    "",
    ...lines,
    "",
    `Machine: ${cpuName()}.`,
    ...(missing ? [`gloo: not measured: ${missing}.`] : []),
    ...(plane.ok ? [] : [`native data plane: not measured: ${plane.reason}.`]),
    "native: the data plane workers use by default (TCP sockets driven by the native addon on a thread of its own, reducing in place); WebSocket: the path under TLS or without the addon.",
    "raw Node TCP: the bytes of a ring all-reduce over plain Node sockets, no framing and no reduction: the ceiling for a transport written in JavaScript.",
    "Command: `npm run bench:allreduce`. One thread per rank; all ranks on this machine over loopback.",
  ].join("\n");
  writeResults("allreduce", { machine: machine(), quick: QUICK, rows }, md, { key: (r) => `${String(r.ranks)} ranks, ${Number(r.bytes) / MiB} MiB`, measures: ["meshtrainBusbw", "websocketBusbw"] });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
