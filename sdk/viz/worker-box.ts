import { formatBytes } from "../plan/memory";
import type { LayerSummary } from "../plan/model-summary";
import { esc } from "./escape";
import { COLORS } from "./figure";

/** Up to five layers a worker holds, one line each ("Dense 128"), then how many more. */
export function layerLines(x: number, y: number, layers: readonly LayerSummary[], lineHeight: number): string[] {
  const shown = layers.slice(0, 5);
  const out = shown.map(
    (l, j) =>
      `<text x="${x}" y="${y + j * lineHeight}" font-size="10">${esc(`${l.className} ${l.outputShape.slice(1).join("x")}`)}</text>`,
  );
  if (layers.length > shown.length)
    out.push(
      `<text x="${x}" y="${y + shown.length * lineHeight}" font-size="10" fill="#555">... ${layers.length - shown.length} more</text>`,
    );
  return out;
}

/**
 * A worker's memory as two bars, state (parameters, gradients, optimizer state) and
 * activations, against the device's memory when it is known (a sliver stays visible), with
 * the numbers underneath.
 */
export function memoryBars(
  x: number,
  y: number,
  width: number,
  o: { state: number; activations: number | null; deviceBytes: number | null; barHeight: number; gap: number },
): string[] {
  const mem = o.deviceBytes;
  const frac = (b: number): number => (mem ? Math.max(b > 0 ? 0.02 : 0, Math.min(1, b / mem)) : b > 0 ? 0.5 : 0);
  const bar = (top: number, bytes: number, color: string): string[] => [
    `<rect x="${x}" y="${top}" width="${width}" height="${o.barHeight}" fill="white" stroke="#999"/>`,
    `<rect x="${x}" y="${top}" width="${(width * frac(bytes)).toFixed(1)}" height="${o.barHeight}" fill="${color}"/>`,
  ];
  const text = y + 2 * o.gap + 10;
  const act = o.activations === null ? "activations ?" : `${formatBytes(o.activations)} act.`;
  return [
    ...bar(y, o.state, COLORS.compute),
    ...bar(y + o.gap, o.activations ?? 0, COLORS.comm),
    `<text x="${x}" y="${text}" font-size="9" fill="#333">${esc(`${formatBytes(o.state)} state, ${act}`)}</text>`,
    `<text x="${x}" y="${text + 11}" font-size="9" fill="#555">${esc(mem ? `of ${formatBytes(mem)} device memory` : "device memory not known")}</text>`,
  ];
}
