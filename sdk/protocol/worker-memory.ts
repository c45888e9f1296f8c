import { z } from "zod";

/**
 * What a worker measured of its own memory during a fit, sent with its "released" reply.
 * `peakFrom`: "kernel" is Linux's high-water mark (every page touched, mid-step included);
 * "sampled" is the largest resident set seen after a step, where no such mark can be reset;
 * "tensors" (a browser tab, which cannot see its process) counts TF.js's tensors only, all fields alike.
 */
export interface WorkerMemory {
  /** The resident set without a model: read as the model's load began (what ran before it settled), less the weights that came with the load. */
  idleRssBytes: number;
  /**
   * V8's young generation (its new space) resident when the idle process was read, and the
   * most resident after any step of the fit. V8 gives those pages back and takes them again as
   * it sees fit (0.5 to 32 MiB seen here, between fits of one worker and within one), so a
   * prediction counts the process's own memory with its young generation as the fit had it.
   * Absent where there is no such heap to read (a browser tab).
   */
  youngIdleBytes?: number;
  youngFitBytes?: number;
  /** The most it held while the model was built and its weights set (the layers' own initial weights and the ones sent, both at once). */
  loadPeakRssBytes: number;
  /** The most it held from the model in place through its last step: training's peak. */
  peakRssBytes: number;
  /** The bytes of the tensors TF.js counted when the fit ended (by their shapes: the state kept between steps). */
  tensorBytes: number;
  /** The bytes of the dataset it loaded itself (feed "workers"), held through the fit beside the training state. */
  dataBytes?: number;
  peakFrom: "kernel" | "sampled" | "tensors";
}

const bytes = z.number().int().nonnegative();

export const WorkerMemorySchema: z.ZodType<WorkerMemory> = z.strictObject({
  idleRssBytes: bytes,
  youngIdleBytes: bytes.optional(),
  youngFitBytes: bytes.optional(),
  loadPeakRssBytes: bytes,
  peakRssBytes: bytes,
  tensorBytes: bytes,
  dataBytes: bytes.optional(),
  peakFrom: z.enum(["kernel", "sampled", "tensors"]),
});
