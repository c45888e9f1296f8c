import { barFigure as bars } from "./bar";
import { figureBundle } from "./bundles";
import { displayableFigure } from "./displayable";
import type { Figure } from "./figure";
import { scalingFigure as scaling, type ScalingPoint } from "./scaling";
import { scheduleFigure as plannedSchedule } from "./schedule-timeline";
import type { Schedule } from "../plan/schedules";
import { lossFigure as losses, stalenessFigure as staleness } from "./ps-figures";
import type { StepRecord, Departure, PushRecord } from "../metrics/records";

/** Speed-up and scaling efficiency against the ideal line (draws itself in a notebook). */
export function scalingFigure(series: Record<string, readonly ScalingPoint[]>, title?: string): Figure {
  return displayableFigure(scaling(series, title), figureBundle);
}

/** Grouped bars of named series over categories (draws itself in a notebook). */
export function barFigure(
  title: string,
  categories: readonly string[],
  series: Record<string, readonly number[]>,
  yTitle: string,
): Figure {
  return displayableFigure(bars(title, categories, series, yTitle), figureBundle);
}

/** A pipeline schedule laid out on an ideal clock (forward 1 unit, backward 2): the planned bubble. */
export function scheduleFigure(schedule: Schedule): Figure {
  return displayableFigure(plannedSchedule(schedule), figureBundle);
}

/** Staleness histograms of several runs side by side (e.g. sync, async, async with a bound). */
export function stalenessFigure(
  runs: ReadonlyArray<{ name: string; pushes: readonly PushRecord[] }>,
  title?: string,
): Figure {
  return displayableFigure(staleness(runs, title), figureBundle);
}

/** Loss against wall-clock time of several runs side by side, with departures marked. */
export function lossFigure(
  runs: ReadonlyArray<{ name: string; history: readonly StepRecord[]; departures?: readonly Departure[] }>,
  title?: string,
): Figure {
  return displayableFigure(losses(runs, title), figureBundle);
}
