import type { HostIO } from "../role";

/**
 * The stages of one pipeline agree whether to apply a step's update: each adds its own flag (a
 * non-finite value, or a failure it survived) to the count arriving from the stage after it and
 * passes it back; stage 0, which then knows every stage's, passes the total forward again. That
 * is 2 (S - 1) one-number messages after the schedule, on the links the micro-batches use (as
 * micro-batch `microBatches`, one past the last). Returns the total.
 */
export async function agreeAcrossStages(
  io: Pick<HostIO, "receive" | "send">,
  at: { step: number; microBatches: number; index: number; count: number },
  own: number,
): Promise<number> {
  const { step, microBatches: tag, index, count } = at;
  let total = own;
  if (index < count - 1) total += (await io.receive("gradient", step, tag))[0]!;
  if (index > 0) io.send("prev", "gradient", step, tag, Float32Array.of(total));
  if (index > 0) total = (await io.receive("activation", step, tag))[0]!;
  if (index < count - 1) io.send("next", "activation", step, tag, Float32Array.of(total));
  return total;
}
