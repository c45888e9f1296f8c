import { z } from "zod";

/**
 * What a worker measured of its own memory during a fit, sent with its "released" reply.
 * `peakFrom`: "kernel" is Linux's high-water mark (every page touched, mid-step included);
 * "sampled" is the largest resident set seen after a step, where no such mark can be reset;
 * "tensors" (a browser tab, which cannot see its process) counts TF.js's tensors only, all fields alike.
 */
export interface WorkerMemory {
  /** The resident set without a model (after its last fit, or when it joined). */
  idleRssBytes: number;
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
  loadPeakRssBytes: bytes,
  peakRssBytes: bytes,
  tensorBytes: bytes,
  dataBytes: bytes.optional(),
  peakFrom: z.enum(["kernel", "sampled", "tensors"]),
});
