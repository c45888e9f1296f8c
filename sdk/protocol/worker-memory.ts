import { z } from "zod";

const bytes = z.number().int().nonnegative();

/**
 * What a worker measured of its own memory during a fit, sent with its "released" reply: the
 * resident set without a model (after its last fit, or when it joined), the most it held
 * while loading the model, and the most from then through its last step (training's), and the bytes of the tensors
 * TF.js counted when the fit ended (the state it kept between steps). `peakFrom`: "kernel" is
 * Linux's high-water mark (every page touched, mid-step included); "sampled" is the largest
 * resident set seen after a step, where no such mark can be reset.
 */
export const WorkerMemorySchema = z.strictObject({
  idleRssBytes: bytes,
  /** While the model was built and its weights set (the layers' own initial weights and the ones sent, both at once). */
  loadPeakRssBytes: bytes,
  peakRssBytes: bytes,
  tensorBytes: bytes,
  peakFrom: z.enum(["kernel", "sampled"]),
});

export type WorkerMemory = z.infer<typeof WorkerMemorySchema>;
