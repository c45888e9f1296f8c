import { barFigure as bars } from "./bar";
import { figureBundle } from "./bundles";
import { displayableFigure } from "./displayable";
import type { Figure } from "./figure";
import { scalingFigure as scaling, type ScalingPoint } from "./scaling";
import { scheduleFigure as plannedSchedule } from "./schedule-timeline";
import type { Schedule } from "../plan/schedules";

/** Speed-up and scaling efficiency against the ideal line (draws itself in a notebook). */
export function scalingFigure(series: Record<string, readonly ScalingPoint[]>, title?: string): Figure {
  return displayableFigure(scaling(series, title), figureBundle);
}

/** Grouped bars of named series over categories (draws itself in a notebook). */
export function barFigure(title: string, categories: readonly string[], series: Record<string, readonly number[]>, yTitle: string): Figure {
  return displayableFigure(bars(title, categories, series, yTitle), figureBundle);
}

/** A pipeline schedule laid out on an ideal clock (forward 1 unit, backward 2): the planned bubble. */
export function scheduleFigure(schedule: Schedule): Figure {
  return displayableFigure(plannedSchedule(schedule), figureBundle);
}
