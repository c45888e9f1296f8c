import * as path from "node:path";
import { fmt, median, QUICK, type Json } from "../common";
import { NamespaceHosts, type Link } from "./netns";
import { joined } from "./joined";

/**
 * What the bytes saved cost in accuracy: the demo CNN on MNIST over one shaped link, float32
 * data parallelism beside 16-bit, PowerSGD and local SGD / DiLoCo, the same epochs each, medians
 * over seeds. The issue's targets: PowerSGD within one point of float32's held-out accuracy;
 * DiLoCo within one point in at least 3x less wall time.
 */
const SEEDS = QUICK ? [1] : [1, 2, 3];
const EPOCHS = QUICK ? 1 : 2;
const VARIANTS = QUICK ? ["sync-4"] : ["float32", "fp16", "powersgd-4", "sync-8", "sync-16"];

export interface AccuracyRow extends Json {
  link: string;
  variant: string;
  accuracy: number[];
  wallMs: number[];
  sentBytes: number[];
  failed: string | null;
}

export async function measureAccuracy(link: Link, workers: number): Promise<{ rows: AccuracyRow[]; markdown: string[] }> {
  const rows: AccuracyRow[] = VARIANTS.map((variant) => ({ link: link.name, variant, accuracy: [], wallMs: [], sentBytes: [], failed: null }));
  const hosts = NamespaceHosts.up(workers + 1, link);
  try {
    // Seeds outside, variants inside: each seed's runs are interleaved, so drift on the machine touches all alike.
    for (const seed of SEEDS) {
      for (const row of rows) {
        if (row.failed) continue;
        try {
          const r = await joined(hosts, workers, (port) => [path.join(__dirname, "mnist-join.js"), String(workers), String(EPOCHS), String(seed), row.variant, hosts.address(0), String(port)]);
          row.accuracy.push(r.accuracy as number);
          row.wallMs.push(r.wall_ms as number);
          row.sentBytes.push(r.sent_bytes as number);
        } catch (err) {
          row.failed = (err instanceof Error ? err.message : String(err)).split("\n").slice(-3).join(" ").slice(0, 300);
        }
        process.stderr.write(`${link.name} accuracy, seed ${seed}: ${row.variant}: ${row.failed ?? `${fmt(100 * row.accuracy[row.accuracy.length - 1]!, 1)}%`}\n`);
      }
    }
  } finally {
    hosts.down();
  }
  return { rows, markdown: accuracyTable(rows, link, workers) };
}

export function accuracyTable(rows: AccuracyRow[], link: Link, workers: number): string[] {
  const base = rows.find((r) => r.variant === "float32");
  const acc0 = base ? median(base.accuracy) : NaN;
  const wall0 = base ? median(base.wallMs) : NaN;
  const out = [
    `#### Accuracy for the bytes: the demo CNN on MNIST, ${workers} hosts at ${link.name}, ${EPOCHS} epoch(s), Adam 0.001, 64 a worker a step (medians of ${SEEDS.length} seed(s))`,
    "",
    "| variant | held-out accuracy | vs float32 (points) | fit wall time, s | float32's wall / this | MB a worker sent over the fit | target |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    const acc = median(r.accuracy);
    const wall = median(r.wallMs);
    const points = 100 * (acc - acc0);
    const speed = wall0 / wall;
    const target = r.variant.startsWith("powersgd") ? `within 1 point: ${points >= -1 ? "reached" : "not reached"}` : r.variant.startsWith("sync") ? `within 1 point in >= 3x less wall: ${points >= -1 && speed >= 3 ? "reached" : "not reached"}` : "";
    out.push(r.failed ? `| ${r.variant} | failed: ${r.failed.replace(/\|/g, "/")} | | | | | |` : `| ${r.variant} | ${fmt(100 * acc, 2)}% | ${fmt(points, 2)} | ${fmt(wall / 1000, 1)} | ${fmt(speed)} | ${fmt(median(r.sentBytes) / 1e6, 1)} | ${base ? target : ""} |`);
  }
  return out;
}
