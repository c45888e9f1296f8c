import type { Compression } from "../../../protocol/wire-formats";
import { hasNonFinite } from "../../../backends/native/finite";
import { ErrorFeedback } from "../../../compute/error-feedback";
import { nonFiniteVariable } from "../../../compute/step-health";
import type { CommHook } from "./comm-hook";

/**
 * fp16 or bf16 with error feedback (DDP's fp16_compress_hook, with the residual carried): each
 * gradient value rounded to 16 bits before it leaves, what rounding left out added to the next
 * step's. The state and the flag stay float32 (fp16 counts exactly only to 2048). A sum that
 * overflowed is the same Infinity on every replica (the ring hands all of them the same bits),
 * so all drop that step alike.
 */
export function halfHook(format: Compression, gradientLength: number): CommHook {
  const feedback = new ErrorFeedback(format, gradientLength);
  return {
    kind: format,
    elementwise: true,
    round: (part, offset) => feedback.compress(part, offset),
    wire: (packed) => feedback.wire(packed),
    sum: (flat, n, allReduce) => allReduce(flat, feedback.wire(n)),
    overflowed(sum, n, vars) {
      const gradient = sum.subarray(0, n);
      if (sum[sum.length - 1] !== 0 || !hasNonFinite(gradient)) return undefined;
      return { where: "compression", variable: nonFiniteVariable(gradient, vars.names, vars.sizes) ?? "?" };
    },
    // A dropped step sent nothing that counts, and its residual may hold Infinity.
    settled: (kept) => (kept ? undefined : feedback.clear()),
    clear: () => feedback.clear(),
  };
}
