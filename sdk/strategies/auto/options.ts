import { z } from "zod";
import { microBatches, schedule } from "../pipeline/options";

/** strategy("auto"): the planner picks data, pipeline or hybrid from the model's memory estimate and the workers' memory; these shape its pipelines. */
export const AutoOptionsSchema = z.strictObject({ microBatches, schedule });
export type AutoOptions = z.output<typeof AutoOptionsSchema>;
