import { z } from "zod";
import { COMPRESSIONS } from "../collectives/half-codec";

/** What strategy(name, options) accepts, per strategy. */

const compressionField = z.enum(COMPRESSIONS);
const stagesField = z.number().int().min(2).max(1024);
const microBatchesField = z.number().int().min(1).max(4096);
const scheduleField = z.enum(["gpipe", "1f1b"]);

export const StrategySpecSchema = z.discriminatedUnion("name", [
  z.strictObject({
    /** Synchronous data parallelism: whole model per worker, gradients averaged by ring all-reduce. */
    name: z.literal("data"),
    /**
     * Who reads the data. "driver" (default, in-graph replication): the driver sends every step's
     * slices. "workers" (between-graph): each worker loads the dataset itself and reads its own
     * slices; the driver only says which step it is. Needs datasets.mnist or datasets.synthetic.
     */
    feed: z.enum(["driver", "workers"]).default("driver"),
    /**
     * Survive lost workers: the others go back to the last step every one of them completed,
     * re-form the ring without the lost one, share its slice of the batch, and carry on while at
     * least minWorkers remain. Workers added during the fit (cluster.add) join at a step boundary.
     */
    elastic: z.strictObject({ minWorkers: z.number().int().min(1).max(4096) }).optional(),
    /**
     * Gradients travel as 16-bit floats (half the bytes), the rounding error carried to the next
     * step (error feedback). "fp16": 10 bits of mantissa, values up to 65504; "bf16": 7 bits, the
     * range of float32. Default: float32.
     */
    compression: compressionField.optional(),
    /**
     * All-reduce the gradient in buckets while the backward pass still computes earlier layers
     * (as DDP does; native data plane and native step only). "auto" (default): only where every
     * worker's machine has a core to spare for the all-reduce's thread, since on machines whose
     * cores all compute it takes its CPU from the backward pass (bench:scaling measures both).
     */
    overlap: z.union([z.literal("auto"), z.boolean()]).default("auto"),
  }),
  z.strictObject({
    /** Model parallelism: contiguous layer ranges on different workers, one whole batch at a time. */
    name: z.literal("model"),
    /** Stages, one worker each. Default: the number of workers. */
    stages: stagesField.optional(),
  }),
  z.strictObject({
    /** Pipeline parallelism: model stages, each batch cut into micro-batches that flow through them. */
    name: z.literal("pipeline"),
    stages: stagesField.optional(),
    /** Micro-batches per replica per step. Default 4. */
    microBatches: microBatchesField.default(4),
    /** "gpipe": all forwards, then all backwards; "1f1b" (default): one forward, one backward. */
    schedule: scheduleField.default("1f1b"),
  }),
  z.strictObject({
    /** Hybrid: R pipeline replicas x S stages; each stage's replicas average gradients by all-reduce. */
    name: z.literal("hybrid"),
    stages: z.number().int().min(1).max(1024),
    /** Default: workers / stages. */
    replicas: z.number().int().min(1).max(4096).optional(),
    microBatches: microBatchesField.default(4),
    schedule: scheduleField.default("1f1b"),
  }),
  z.strictObject({
    /**
     * Parameter servers (`.ps(n)`) hold the trainable parameters, sharded by bytes; workers pull
     * them, compute gradients on their slices and push them to the servers, which apply the optimizer.
     */
    name: z.literal("ps"),
    /**
     * "async" (default): each push is applied on arrival and workers never wait for each other.
     * "sync": the servers sum one push per worker per step and apply it once (equals one process
     * training on the global batch).
     */
    mode: z.enum(["async", "sync"]).default("async"),
    /**
     * Async only (stale-synchronous parallel): a worker starts a step only while it is at most
     * this many steps ahead of the slowest worker still training. Default: unbounded.
     */
    staleness: z.number().int().min(0).max(1_000_000).optional(),
    /** Pushes carry 16-bit gradients with error feedback, as strategy("data", { compression }). */
    compression: compressionField.optional(),
  }),
  z.strictObject({
    /** The planner picks data, pipeline or hybrid from the model's memory estimate and the workers' memory. */
    name: z.literal("auto"),
    microBatches: microBatchesField.default(4),
    schedule: scheduleField.default("1f1b"),
  }),
]);
export const STRATEGY_NAMES = ["data", "ps", "model", "pipeline", "hybrid", "auto"] as const;
