import { formatBytes } from "../plan/memory";
import { COLORS } from "./figure";
import { layerLines, memoryBars } from "./worker-box";
import { esc } from "./escape";
import { arrowMarker, placementDocument } from "./svg-parts";
import type { PipelinePlan } from "../plan/plans";

const BOX_W = 170;
const BOX_H = 200;
const GAP_X = 64;
const GAP_Y = 44;

const TITLES = { model: "Model parallelism", pipeline: "Pipeline parallelism", hybrid: "Hybrid parallelism" } as const;

/**
 * The placement of a model, pipeline or hybrid plan: a column per stage and a row per replica;
 * each box a worker with the layers it holds, their FLOPs, and its memory (parameters, gradients
 * and optimizer state; activations of the micro-batches in flight) against the device's memory.
 * Arrows show activations going forward and gradients coming back; dashed lines join a stage's
 * replicas, which all-reduce their gradients.
 */
export function stagePlacementSvg(plan: PipelinePlan): string {
  const S = plan.stages;
  const R = plan.replicas;
  const width = Math.max(760, 40 + S * BOX_W + (S - 1) * GAP_X);
  const height = 98 + R * BOX_H + (R - 1) * GAP_Y + 40;
  const out = heading(plan);
  for (let r = 0; r < R; r++) {
    for (let s = 0; s < S; s++) {
      const at: [number, number] = [20 + s * (BOX_W + GAP_X), 84 + r * (BOX_H + GAP_Y)];
      out.push(...stageBox(plan, r, s, at));
      if (s < S - 1) out.push(...handOff(plan, s, at));
      if (r < R - 1) out.push(...replicaLink(at));
    }
  }
  out.push(...legend(R, height - 14));
  return placementDocument(width, height, out);
}

/** The title, how the model was split, the prediction, and the arrows' markers. */
function heading(plan: PipelinePlan): string[] {
  const micro = plan.batch?.microBatch;
  const placed = plan.placed.length > 0 ? ` (${plan.placed.length} placed by hand)` : "";
  const split = `"${esc(plan.model.name)}": ${plan.model.layers.length} layers split into ${plan.stages} contiguous stages${placed}${micro ? `; micro-batches of ${micro} samples` : ""}`;
  const p = plan.prediction;
  return [
    `<text x="16" y="24" font-size="15" font-weight="bold">${TITLES[plan.strategy]}: ${plan.replicas} replica(s) x ${plan.stages} stage(s), ${plan.microBatches} micro-batch(es), ${plan.schedule.name.toUpperCase()}</text>`,
    `<text x="16" y="42" font-size="11" fill="#555">${split}</text>`,
    ...(p
      ? [
          `<text x="16" y="58" font-size="11" fill="#555">predicted: ${p.stepMs.toFixed(1)} ms per step, ${p.samplesPerSecond.toFixed(0)} samples/s, bubble ${(p.bubble * 100).toFixed(0)}%</text>`,
        ]
      : []),
    `<defs>${arrowMarker("act", COLORS.compute, 7)}${arrowMarker("grad", COLORS.comm, 7)}</defs>`,
  ];
}

/** Replica r's worker for stage s: its rank, device, layers, FLOPs and memory bars. */
function stageBox(plan: PipelinePlan, r: number, s: number, [x, y]: [number, number]): string[] {
  const st = plan.stagePlans[s]!;
  const rank = plan.ranks[r]![s]!;
  const dev = plan.devices?.[rank];
  const mem = dev && dev.memoryBytes > 0 ? dev.memoryBytes : null;
  const pinned = plan.placed.some(([p]) => p === s);
  return [
    `<rect x="${x}" y="${y}" width="${BOX_W}" height="${BOX_H}" rx="8" fill="#F7F9FC" stroke="${COLORS.compute}" stroke-width="${pinned ? 2.5 : 1.5}"${pinned ? ' stroke-dasharray="6 3"' : ""}/>`,
    `<text x="${x + 10}" y="${y + 20}" font-size="13" font-weight="bold">rank ${rank}</text>`,
    `<text x="${x + BOX_W - 10}" y="${y + 20}" font-size="11" text-anchor="end" fill="#555">stage ${s}${plan.replicas > 1 ? `, replica ${r}` : ""}</text>`,
    `<text x="${x + 10}" y="${y + 36}" font-size="10" fill="#555">${esc(dev ? `${dev.backend} on ${dev.device}` : "device: known once launched")}</text>`,
    `<text x="${x + 10}" y="${y + 52}" font-size="10" font-weight="bold">${esc(`layers [${st.from}, ${st.to})${pinned ? ", placed" : ""}`)}</text>`,
    ...layerLines(x + 10, y + 66, plan.model.layers.slice(st.from, st.to), 12),
    `<text x="${x + 10}" y="${y + 138}" font-size="10">${(st.flopsPerSample / 1e6).toFixed(2)} MFLOP/sample, ${st.inFlight} in flight</text>`,
    ...memoryBars(x + 10, y + 146, BOX_W - 20, {
      state: st.stateBytes,
      activations: st.activationBytes,
      deviceBytes: mem,
      barHeight: 9,
      gap: 12,
    }),
  ];
}

/** Stage s hands its activations to the next and gets their gradients back: arrows with a micro-batch's bytes. */
function handOff(plan: PipelinePlan, s: number, [x, y]: [number, number]): string[] {
  const st = plan.stagePlans[s]!;
  const micro = plan.batch?.microBatch;
  const bytes = micro ? ` ${formatBytes(st.outputShape.reduce((a, d) => a * d, 1) * 4 * micro)}` : "";
  const ax = x + BOX_W;
  const bx = x + BOX_W + GAP_X;
  return [
    `<path d="M${ax + 2},${y + 70} L${bx - 2},${y + 70}" stroke="${COLORS.compute}" stroke-width="2" marker-end="url(#act)"/>`,
    `<text x="${(ax + bx) / 2}" y="${y + 64}" font-size="9" text-anchor="middle" fill="${COLORS.compute}">act.${bytes}</text>`,
    `<path d="M${bx - 2},${y + 100} L${ax + 2},${y + 100}" stroke="${COLORS.comm}" stroke-width="2" marker-end="url(#grad)"/>`,
    `<text x="${(ax + bx) / 2}" y="${y + 114}" font-size="9" text-anchor="middle" fill="${COLORS.comm}">grad.${bytes}</text>`,
  ];
}

/** A dashed line to the same stage's next replica: they all-reduce their gradients. */
function replicaLink([x, y]: [number, number]): string[] {
  const cx = x + BOX_W / 2;
  return [
    `<path d="M${cx},${y + BOX_H + 2} L${cx},${y + BOX_H + GAP_Y - 2}" stroke="${COLORS.apply}" stroke-width="2.5" stroke-dasharray="5 3"/>`,
    `<text x="${cx + 6}" y="${y + BOX_H + GAP_Y / 2 + 4}" font-size="9" fill="#333">all-reduce</text>`,
  ];
}

function legend(replicas: number, ly: number): string[] {
  return [
    `<rect x="16" y="${ly - 9}" width="10" height="10" fill="${COLORS.compute}"/><text x="30" y="${ly}" font-size="10">state; &#8594; activations per micro-batch</text>`,
    `<rect x="230" y="${ly - 9}" width="10" height="10" fill="${COLORS.comm}"/><text x="244" y="${ly}" font-size="10">activations (estimate); &#8592; their gradients</text>`,
    ...(replicas > 1
      ? [`<text x="500" y="${ly}" font-size="10" fill="#333">dashed: a stage's replicas all-reduce gradients</text>`]
      : []),
  ];
}
