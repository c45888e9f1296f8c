import { PowerSgd } from "../power-sgd";
import type { CommHook } from "./comm-hook";

/**
 * PowerSGD (DDP's powerSGD_hook): each gradient of two or more dimensions goes as low-rank
 * factors, with error feedback (see PowerSgd). The factors need the whole gradient at once, so
 * it goes after the backward pass, never in buckets or shards.
 */
export function powerSgdHook(shapes: ReadonlyArray<readonly number[]>, rank: number): CommHook {
  const power = new PowerSgd(shapes, rank);
  return {
    kind: "powersgd",
    elementwise: false,
    round: () => undefined,
    wire: () => undefined,
    sum: (flat, n, allReduce) => power.allReduce(flat, n, (d) => allReduce(d)),
    overflowed: () => undefined,
    // An applied sum keeps its factors and error; a dropped one forgets them.
    settled: (kept) => (kept ? power.commit() : power.drop()),
    clear: () => power.drop(),
  };
}
