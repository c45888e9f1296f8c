import { ConfigError } from "../../errors/errors";
import { describeCut, type Cut } from "../../model/cuts";

/**
 * Explicit placement, tf.device style: `plan.place([from, to], rank)` pins layers [from, to)
 * to the stage that `rank` runs (rank % stages; in a hybrid, every replica of that stage).
 * Stages not placed are split around the placed ones by the partitioner.
 */
export function pinStage(
  pinned: ReadonlyMap<number, readonly [number, number]>,
  range: readonly [number, number],
  rank: number,
  o: { stages: number; worldSize: number; layers: number; cuts?: readonly Cut[] },
): Map<number, readonly [number, number]> {
  const [from, to] = range;
  if (!Number.isInteger(rank) || rank < 0 || rank >= o.worldSize) {
    throw new ConfigError(
      `place(..., ${rank}): rank ${rank} is not one of this plan's workers (0 to ${o.worldSize - 1})`,
    );
  }
  if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to > o.layers || to <= from) {
    throw new ConfigError(
      `place([${from}, ${to}], ${rank}): a layer range is [from, to) with 0 <= from < to <= ${o.layers} (the model has ${o.layers} layers)`,
    );
  }
  for (const j of [from, to]) refuseInsideBlock(j, o.cuts, `place([${from}, ${to}], ${rank})`);
  const stage = rank % o.stages;
  const next = new Map(pinned);
  next.set(stage, [from, to]);
  // Stages hold contiguous ranges in stage order: each placed range must leave room, in layers,
  // for the stages between it and its placed neighbours.
  const placed = [...next].sort((a, b) => a[0] - b[0]);
  let end = 0;
  let lastStage = -1;
  for (const [s, [a, b]] of placed) {
    const between = s - lastStage - 1;
    if (a - end < between || (between === 0 && a !== end)) {
      throw new ConfigError(
        `place([${from}, ${to}], ${rank}): stage ${s} would start at layer ${a}, but ${lastStage >= 0 ? `stage ${lastStage} ends at layer ${end}` : "the model starts at layer 0"} and the ${between} stage(s) between need one layer each, in order`,
        { hint: "place stages in layer order: stage s holds the layers right after stage s-1's" },
      );
    }
    end = b;
    lastStage = s;
  }
  if (lastStage === o.stages - 1 && end !== o.layers) {
    throw new ConfigError(
      `place([${from}, ${to}], ${rank}): the last stage (${lastStage}) ends at layer ${end}, leaving layers [${end}, ${o.layers}) on no stage`,
    );
  }
  if (o.layers - end < o.stages - 1 - lastStage) {
    throw new ConfigError(
      `place([${from}, ${to}], ${rank}): stage ${lastStage} ends at layer ${end}, leaving ${o.layers - end} layer(s) for ${o.stages - 1 - lastStage} later stage(s)`,
    );
  }
  return next;
}

/** Refuses a stage boundary before layer j that would fall inside a block (where more than one tensor crosses). */
function refuseInsideBlock(j: number, cuts: readonly Cut[] | undefined, call: string): void {
  const c = cuts?.[j];
  if (!c || c.ok) return;
  const near = cuts!.map((x, k) => (x.ok ? k : -1)).filter((k) => k >= 0);
  const below = near.filter((k) => k < j).pop();
  const above = near.find((k) => k > j);
  throw new ConfigError(
    `${call}: a stage boundary before layer ${j} would fall ${describeCut(c)}; a stage passes one tensor to the next, so a block stays whole within a stage`,
    {
      hint: `start or end the stage where one tensor crosses: before layer ${[below, above].filter((k) => k !== undefined).join(" or ")}`,
      details: { block: c.block.first, blockEnd: c.block.last },
    },
  );
}
