import { formatBytes } from "../plan/memory";
import { esc } from "./escape";
import { COLORS } from "./figure";
import { layerLines, memoryBars } from "./worker-box";
import type { PsPlan } from "../plan/plans";

const BOX_W = 150;
const SERVER_H = 118;
const WORKER_H = 196;
const GAP = 40;
const ROW_GAP = 90;

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
  const serverY = 70;
  const workerY = serverY + SERVER_H + ROW_GAP;
  const height = workerY + WORKER_H + 44;
  const rowX = (count: number, i: number): number => {
    const used = count * BOX_W + (count - 1) * GAP;
    return (width - used) / 2 + i * (BOX_W + GAP);
  };
  const out: string[] = [];
  const mode = plan.mode === "sync" ? "one summed update per step, from every worker's push" : `each push applied on arrival${plan.staleness === null ? "" : `; at most ${plan.staleness} step(s) ahead of the slowest`}`;
  out.push(`<text x="16" y="24" font-size="15" font-weight="bold">Parameter servers: ${n} worker(s), ${s} server(s), ${plan.mode}</text>`);
  out.push(`<text x="16" y="40" font-size="11" fill="#555">${esc(`${plan.mode}: ${mode}`)}</text>`);
  out.push(`<text x="16" y="54" font-size="11" fill="#555">${esc(`the servers hold the ${plan.model.variables.length} trainable variables, split by bytes; every worker holds the whole model`)}</text>`);
  out.push(`<defs><marker id="ps-arrow-pull" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="${COLORS.compute}"/></marker><marker id="ps-arrow-push" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="${COLORS.comm}"/></marker></defs>`);
  // Pulls and pushes first, so the boxes sit on top of the lines.
  for (let w = 0; w < n; w++) {
    for (let k = 0; k < s; k++) {
      const wx = rowX(n, w) + BOX_W / 2;
      const sx = rowX(s, k) + BOX_W / 2;
      out.push(`<path d="M${sx - 4},${serverY + SERVER_H} L${wx - 4},${workerY - 2}" stroke="${COLORS.compute}" stroke-width="1.3" fill="none" marker-end="url(#ps-arrow-pull)"/>`);
      out.push(`<path d="M${wx + 4},${workerY} L${sx + 4},${serverY + SERVER_H + 2}" stroke="${COLORS.comm}" stroke-width="1.3" fill="none" marker-end="url(#ps-arrow-push)"/>`);
    }
  }
  plan.servers.forEach((srv, k) => {
    const x = rowX(s, k);
    out.push(`<rect x="${x}" y="${serverY}" width="${BOX_W}" height="${SERVER_H}" rx="8" fill="#FFF8EE" stroke="${COLORS.comm}" stroke-width="1.5"/>`);
    out.push(`<text x="${x + 10}" y="${serverY + 20}" font-size="13" font-weight="bold">server ${srv.index}</text>`);
    out.push(`<text x="${x + BOX_W - 10}" y="${serverY + 20}" font-size="11" text-anchor="end" fill="#555">${esc(formatBytes(srv.bytes))}</text>`);
    const shown = srv.variables.slice(0, 5);
    shown.forEach((v, j) => out.push(`<text x="${x + 10}" y="${serverY + 40 + j * 13}" font-size="10">${esc(`${v.name} ${v.shape.join("x")}`)}</text>`));
    if (srv.variables.length > shown.length) out.push(`<text x="${x + 10}" y="${serverY + 40 + shown.length * 13}" font-size="10" fill="#555">... ${srv.variables.length - shown.length} more</text>`);
  });
  const m = plan.memory;
  plan.workers.forEach((w, i) => {
    const x = rowX(n, i);
    const dev = plan.devices?.[w.rank];
    const slow = w.slowdown > 1;
    out.push(`<rect x="${x}" y="${workerY}" width="${BOX_W}" height="${WORKER_H}" rx="8" fill="#F7F9FC" stroke="${slow ? "#C0392B" : COLORS.compute}" stroke-width="${slow ? 2.5 : 1.5}"/>`);
    out.push(`<text x="${x + 10}" y="${workerY + 20}" font-size="13" font-weight="bold">rank ${w.rank}</text>`);
    if (slow) out.push(`<text x="${x + BOX_W - 10}" y="${workerY + 20}" font-size="11" text-anchor="end" fill="#C0392B" font-weight="bold">${w.slowdown}x slower</text>`);
    out.push(`<text x="${x + 10}" y="${workerY + 36}" font-size="10" fill="#555">${esc(dev ? `${dev.backend} on ${dev.device}` : "device: known once launched")}</text>`);
    out.push(...layerLines(x + 10, workerY + 54, plan.model.layers, 13));
    if (plan.batch) out.push(`<text x="${x + 10}" y="${workerY + 132}" font-size="10">batch slice: ${plan.batch.perReplica[w.rank]} samples</text>`);
    // Workers keep parameters and gradients; the optimizer state lives on the servers.
    out.push(...memoryBars(x + 10, workerY + 144, BOX_W - 20, { state: m.paramsBytes + m.gradientBytes, activations: m.activationBytes, deviceBytes: dev && dev.memoryBytes > 0 ? dev.memoryBytes : null, barHeight: 10, gap: 14 }));
  });
  const ly = height - 14;
  out.push(`<line x1="16" y1="${ly - 4}" x2="36" y2="${ly - 4}" stroke="${COLORS.compute}" stroke-width="2"/><text x="42" y="${ly}" font-size="10">pull: parameters, server to worker</text>`);
  out.push(`<line x1="230" y1="${ly - 4}" x2="250" y2="${ly - 4}" stroke="${COLORS.comm}" stroke-width="2"/><text x="256" y="${ly}" font-size="10">push: gradients, worker to server</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif"><rect width="${width}" height="${height}" fill="white"/>${out.join("")}</svg>`;
}
