import type { StrategyPlanner } from "../strategy";
import { AutoOptionsSchema, type AutoOptions } from "./options";
import { planAuto } from "./planner";

/**
 * strategy("auto"): the planner picks data parallelism when the model fits every worker, else
 * ZeRO-1 when a share of the optimizer's state makes it fit, else the fewest stages that fit,
 * replicated as the workers allow; everything after planning is the chosen strategy's (its plans
 * name it).
 */
export const autoStrategy: StrategyPlanner<AutoOptions> & { options: typeof AutoOptionsSchema } = {
  options: AutoOptionsSchema,
  // Its plans are of whichever family it chose: a plan of either trains on an "auto" cluster.
  family: "any",
  servers: "refused",
  slowdown: false,
  spares: false,
  profiled: "layers",
  check: () => undefined,
  // Its plans may be data-parallel (ZeRO-2/3 ranked against stages by predicted speed, with a
  // collective per bucket of layers): priced by the ring that would carry them, as strategy "data"'s are.
  probesRing: (_, workers) => workers >= 2,
  plan: planAuto,
  roles: [],
};
