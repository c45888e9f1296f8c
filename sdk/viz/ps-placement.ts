import { formatBytes } from "../plan/memory";
import { esc } from "./escape";
import { arrowMarker, placementDocument } from "./svg-parts";
import { COLORS } from "./figure";
import { layerLines, memoryBars } from "./worker-box";
import type { PsPlan } from "../plan/plans";

const BOX_W = 150;
const SERVER_H = 118;
const WORKER_H = 196;
const GAP = 40;
const ROW_GAP = 90;
const SERVER_Y = 70;
const WORKER_Y = SERVER_Y + SERVER_H + ROW_GAP;

/**
 * The parameter-server diagram: the servers on top with the variables each holds and their
 * bytes; the workers below, each with the whole model, its batch slice, its memory and any
 * slowdown; between them the pulls (parameters down) and pushes (gradients up).
 */
export function psPlacementSvg(plan: PsPlan): string {
  const n = plan.worldSize;
  const s = plan.servers.length;
  const cols = Math.max(n, s);
  const width = Math.max(660, 30 + cols * (BOX_W + GAP));
  const height = WORKER_Y + WORKER_H + 44;
  const rowX = (count: number, i: number): number => {
    const used = count * BOX_W + (count - 1) * GAP;
    return (width - used) / 2 + i * (BOX_W + GAP);
  };
  const arrows: string[] = [];
  // Pulls and pushes first, so the boxes sit on top of the lines.
  for (let w = 0; w < n; w++) for (let k = 0; k < s; k++) arrows.push(...pullAndPush(rowX(n, w), rowX(s, k)));
  const out = [
    ...heading(plan),
    ...arrows,
    ...plan.servers.flatMap((srv, k) => serverBox(srv, rowX(s, k))),
    ...plan.workers.flatMap((w, i) => workerBox(plan, w, rowX(n, i))),
    ...legend(height - 14),
  ];
  return placementDocument(width, height, out);
}

/** The title, the mode in words, and the arrows' markers. */
function heading(plan: PsPlan): string[] {
  const staleness = plan.staleness === null ? "" : `; at most ${plan.staleness} step(s) ahead of the slowest`;
  const mode =
    plan.mode === "sync"
      ? "one summed update per step, from every worker's push"
      : `each push applied on arrival${staleness}`;
  const holds = `the servers hold the ${plan.model.variables.length} trainable variables, split by bytes; every worker holds the whole model`;
  return [
    `<text x="16" y="24" font-size="15" font-weight="bold">Parameter servers: ${plan.worldSize} worker(s), ${plan.servers.length} server(s), ${plan.mode}</text>`,
    `<text x="16" y="40" font-size="11" fill="#555">${esc(`${plan.mode}: ${mode}`)}</text>`,
    `<text x="16" y="54" font-size="11" fill="#555">${esc(holds)}</text>`,
    `<defs>${arrowMarker("ps-arrow-pull", COLORS.compute, 6)}${arrowMarker("ps-arrow-push", COLORS.comm, 6)}</defs>`,
  ];
}

/** A worker's pull from a server (parameters down) and its push to it (gradients up), boxes at x `wx` and `sx`. */
function pullAndPush(wx0: number, sx0: number): string[] {
  const wx = wx0 + BOX_W / 2;
  const sx = sx0 + BOX_W / 2;
  return [
    `<path d="M${sx - 4},${SERVER_Y + SERVER_H} L${wx - 4},${WORKER_Y - 2}" stroke="${COLORS.compute}" stroke-width="1.3" fill="none" marker-end="url(#ps-arrow-pull)"/>`,
    `<path d="M${wx + 4},${WORKER_Y} L${sx + 4},${SERVER_Y + SERVER_H + 2}" stroke="${COLORS.comm}" stroke-width="1.3" fill="none" marker-end="url(#ps-arrow-push)"/>`,
  ];
}

/** A server's box: its index, bytes and the first variables it holds. */
function serverBox(srv: PsPlan["servers"][number], x: number): string[] {
  const shown = srv.variables.slice(0, 5);
  const more = srv.variables.length - shown.length;
  return [
    `<rect x="${x}" y="${SERVER_Y}" width="${BOX_W}" height="${SERVER_H}" rx="8" fill="#FFF8EE" stroke="${COLORS.comm}" stroke-width="1.5"/>`,
    `<text x="${x + 10}" y="${SERVER_Y + 20}" font-size="13" font-weight="bold">server ${srv.index}</text>`,
    `<text x="${x + BOX_W - 10}" y="${SERVER_Y + 20}" font-size="11" text-anchor="end" fill="#555">${esc(formatBytes(srv.bytes))}</text>`,
    ...shown.map(
      (v, j) =>
        `<text x="${x + 10}" y="${SERVER_Y + 40 + j * 13}" font-size="10">${esc(`${v.name} ${v.shape.join("x")}`)}</text>`,
    ),
    ...(more > 0
      ? [
          `<text x="${x + 10}" y="${SERVER_Y + 40 + shown.length * 13}" font-size="10" fill="#555">... ${more} more</text>`,
        ]
      : []),
  ];
}

/** A worker's box: its rank, any slowdown, device, layers, batch slice and memory bars. */
function workerBox(plan: PsPlan, w: PsPlan["workers"][number], x: number): string[] {
  const m = plan.memory;
  const dev = plan.devices?.[w.rank];
  const slow = w.slowdown > 1;
  const y = WORKER_Y;
  return [
    `<rect x="${x}" y="${y}" width="${BOX_W}" height="${WORKER_H}" rx="8" fill="#F7F9FC" stroke="${slow ? "#C0392B" : COLORS.compute}" stroke-width="${slow ? 2.5 : 1.5}"/>`,
    `<text x="${x + 10}" y="${y + 20}" font-size="13" font-weight="bold">rank ${w.rank}</text>`,
    ...(slow
      ? [
          `<text x="${x + BOX_W - 10}" y="${y + 20}" font-size="11" text-anchor="end" fill="#C0392B" font-weight="bold">${w.slowdown}x slower</text>`,
        ]
      : []),
    `<text x="${x + 10}" y="${y + 36}" font-size="10" fill="#555">${esc(dev ? `${dev.backend} on ${dev.device}` : "device: known once launched")}</text>`,
    ...layerLines(x + 10, y + 54, plan.model.layers, 13),
    ...(plan.batch
      ? [
          `<text x="${x + 10}" y="${y + 132}" font-size="10">batch slice: ${plan.batch.perReplica[w.rank]} samples</text>`,
        ]
      : []),
    // Workers keep parameters and gradients; the optimizer state lives on the servers.
    ...memoryBars(x + 10, y + 144, BOX_W - 20, {
      state: m.paramsBytes + m.gradientBytes,
      activations: m.activationBytes,
      deviceBytes: dev && dev.memoryBytes > 0 ? dev.memoryBytes : null,
      barHeight: 10,
      gap: 14,
    }),
  ];
}

function legend(ly: number): string[] {
  return [
    `<line x1="16" y1="${ly - 4}" x2="36" y2="${ly - 4}" stroke="${COLORS.compute}" stroke-width="2"/><text x="42" y="${ly}" font-size="10">pull: parameters, server to worker</text>`,
    `<line x1="230" y1="${ly - 4}" x2="250" y2="${ly - 4}" stroke="${COLORS.comm}" stroke-width="2"/><text x="256" y="${ly}" font-size="10">push: gradients, worker to server</text>`,
  ];
}
