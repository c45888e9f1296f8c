import type { CommHook } from "./comm-hook";

/** No hook: the gradient summed whole, in float32 (DDP's default allreduce_hook). */
export function wholeHook(): CommHook {
  return {
    kind: "none",
    elementwise: true,
    round: () => undefined,
    wire: () => undefined,
    sum: (flat, _n, allReduce) => allReduce(flat),
    overflowed: () => undefined,
    settled: () => undefined,
    clear: () => undefined,
  };
}
