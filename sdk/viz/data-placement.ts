import { COLORS } from "./figure";
import { layerLines, memoryBars } from "./worker-box";
import { esc } from "./escape";
import { arrowMarker, placementDocument } from "./svg-parts";
import type { DataParallelPlan } from "../plan/plans";

const BOX_W = 150;
const BOX_H = 196;
const GAP = 40;
const PER_ROW = 4;

/**
 * The placement diagram: one box per worker with what it holds (every layer, for data
 * parallelism), its share of the batch, its memory (parameters, gradients and optimizer state;
 * activations) as bars against the device's memory, and the all-reduce ring as arrows.
 */
type Pos = (i: number) => [number, number];

export function dataPlacementSvg(plan: DataParallelPlan): string {
  const n = plan.worldSize;
  const cols = Math.min(n, PER_ROW);
  const rows = Math.ceil(n / PER_ROW);
  const width = Math.max(660, 30 + cols * (BOX_W + GAP));
  const height = 70 + rows * (BOX_H + 56) + 30;
  const pos: Pos = (i) => [20 + (i % PER_ROW) * (BOX_W + GAP), 56 + Math.floor(i / PER_ROW) * (BOX_H + 56)];
  const out = [
    `<text x="16" y="24" font-size="15" font-weight="bold">Data parallelism: ${n} worker(s), ${n} replica(s)</text>`,
    `<text x="16" y="42" font-size="11" fill="#555">${holdsLine(plan)}</text>`,
    ...plan.workers.flatMap((w, i) => workerBox(plan, w, pos(i))),
    ...(n > 1 ? ringArrows(plan, pos) : []),
    ...legend(plan, height - 14),
  ];
  return placementDocument(width, height, out);
}

/** What every worker holds, in words (the sharding, if any). */
function holdsLine(plan: DataParallelPlan): string {
  const n = plan.worldSize;
  const layers = plan.model.layers.length;
  const model = `"${esc(plan.model.name)}" (${plan.model.paramCount.toLocaleString("en-US")} parameters)`;
  if (n > 1 && plan.shard === "parameters")
    return `ZeRO-3: each holds 1/${n} of every layer of ${model}, gathering a layer for its passes`;
  if (n > 1 && plan.shard === "gradients")
    return `ZeRO-2: each holds all ${layers} layers of ${model} and 1/${n} of the gradient and optimizer state`;
  if (n > 1 && plan.shard === "optimizer")
    return `ZeRO-1: each holds all ${layers} layers of ${model} and 1/${n} of the optimizer state`;
  return `each holds all ${layers} layers of ${model}; gradients summed by ring all-reduce`;
}

/** One worker's box: its rank, device, layers, batch slice and memory bars. */
function workerBox(plan: DataParallelPlan, w: DataParallelPlan["workers"][number], [x, y]: [number, number]): string[] {
  const m = plan.memory;
  const state = m.paramsBytes + m.gradientBytes + (m.optimizerBytes ?? 0);
  const dev = plan.devices?.[w.rank];
  const gpu = dev?.gpu ? `GPU: ${dev.gpu.name}${dev.gpu.software ? " (software)" : ""}` : null;
  const device = `${dev?.tab ? "tab, " : ""}${gpu ?? (dev ? `${dev.backend} on ${dev.device}` : "device: known once launched")}`;
  const mem = dev && dev.memoryBytes > 0 ? dev.memoryBytes : null;
  const right = `x="${x + BOX_W - 10}" y="${y + 20}" font-size="11" text-anchor="end"`;
  return [
    `<rect x="${x}" y="${y}" width="${BOX_W}" height="${BOX_H}" rx="8" fill="#F7F9FC" stroke="${COLORS.compute}" stroke-width="1.5"/>`,
    `<text x="${x + 10}" y="${y + 20}" font-size="13" font-weight="bold">rank ${w.rank}</text>`,
    w.slowdown > 1
      ? `<text ${right} fill="#C0392B" font-weight="bold">${w.slowdown}x slower</text>`
      : `<text ${right} fill="#555">replica ${w.replica}</text>`,
    `<text x="${x + 10}" y="${y + 36}" font-size="10" fill="#555">${esc(device)}</text>`,
    ...layerLines(x + 10, y + 54, plan.model.layers, 13),
    ...(plan.batch
      ? [
          `<text x="${x + 10}" y="${y + 132}" font-size="10">batch slice: ${plan.batch.perReplica[w.replica]} samples</text>`,
        ]
      : []),
    ...memoryBars(x + 10, y + 144, BOX_W - 20, {
      state,
      activations: m.activationBytes,
      deviceBytes: mem,
      barHeight: 10,
      gap: 14,
    }),
  ];
}

/** The ring: rank i sends to rank i+1, the last back to the first. */
function ringArrows(plan: DataParallelPlan, pos: Pos): string[] {
  const n = plan.worldSize;
  const out = [`<defs>${arrowMarker("arrow", COLORS.comm, 7)}</defs>`];
  plan.ring.forEach((rank, i) => {
    const next = plan.ring[(i + 1) % n]!;
    const [ax, ay] = pos(plan.workers.findIndex((w) => w.rank === rank));
    const [bx, by] = pos(plan.workers.findIndex((w) => w.rank === next));
    const sameRow = ay === by && bx > ax;
    const below = Math.max(ay, by) + BOX_H + 40;
    const d = sameRow
      ? `M${ax + BOX_W},${ay + BOX_H / 2} L${bx - 2},${by + BOX_H / 2}`
      : `M${ax + BOX_W / 2},${ay + BOX_H} C${ax + BOX_W / 2},${ay + BOX_H + 40} ${bx + BOX_W / 2},${below} ${bx + BOX_W / 2},${by + BOX_H + 2}`;
    out.push(`<path d="${d}" fill="none" stroke="${COLORS.comm}" stroke-width="2" marker-end="url(#arrow)"/>`);
  });
  return out;
}

function legend(plan: DataParallelPlan, ly: number): string[] {
  const ring = plan.shard ? "reduce-scatter and all-gather" : "all-reduce";
  return [
    `<rect x="16" y="${ly - 9}" width="10" height="10" fill="${COLORS.compute}"/><text x="30" y="${ly}" font-size="10">parameters, gradients, optimizer state</text>`,
    `<rect x="230" y="${ly - 9}" width="10" height="10" fill="${COLORS.comm}"/><text x="244" y="${ly}" font-size="10">activations (estimate)</text>`,
    ...(plan.worldSize > 1
      ? [
          `<text x="380" y="${ly}" font-size="10" fill="${COLORS.comm}">&#8594; ${ring} ring (rank i sends to rank i+1)</text>`,
        ]
      : []),
  ];
}
