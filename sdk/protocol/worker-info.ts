import { z } from "zod";

/** A GPU as its worker reports it: what kind, which adapter, whether it is a software rasteriser. */
export const GpuFactsSchema = z.strictObject({
  /** "cuda": through tfjs-node-gpu; "webgpu": through Dawn or a browser's WebGPU; "webgl": a browser tab's WebGL. */
  kind: z.enum(["cuda", "webgpu", "webgl"]),
  name: z.string().max(256),
  vendor: z.string().max(256),
  architecture: z.string().max(256),
  description: z.string().max(512),
  /** A CPU rasteriser standing in for a GPU (SwiftShader, llvmpipe): correct, and slow. */
  software: z.boolean(),
  /** The largest buffer the adapter allows, bytes. */
  maxBufferBytes: z.number().nonnegative(),
  /** Host-device transfers, measured when the worker joined (a 4 MiB read back and upload, the slower of the two), bytes/s. */
  transferBytesPerSecond: z.number().nonnegative().optional(),
  /** The Vulkan driver manifest the worker was given (it sees that driver's adapters only), where it was given one. */
  driver: z.string().max(4096).optional(),
});
/** A GPU as its worker reports it. */
export type GpuFacts = z.infer<typeof GpuFactsSchema>;

export const WorkerInfoSchema = z.strictObject({
  pid: z.number().int(),
  hostname: z.string().max(256),
  version: z.string().max(64),
  node: z.string().max(64),
  /** The backend actually running, e.g. "cpu". */
  backend: z.string().max(64),
  /** What the backend computes on, e.g. "cpu", "cuda:0" or "webgpu: <adapter>" (software adapters say so). */
  device: z.string().max(512),
  /** The GPU, for workers on one. */
  gpu: GpuFactsSchema.optional(),
  /** Memory the device has, in bytes (host RAM for CPU backends). */
  memoryBytes: z.number().nonnegative(),
  cpus: z.number().int().nonnegative(),
  /** The cores it may run on (its CPU affinity), where the system says: a machine's cores are the union of its workers'. */
  cores: z.array(z.number().int().nonnegative().max(65535)).max(4096).optional(),
  /** Measured at join: matrix-multiply speed of the backend, in GFLOP/s. */
  gflops: z.number().nonnegative(),
  /** Measured at join: the fixed cost of one TF.js kernel on the backend, in microseconds. */
  kernelOverheadUs: z.number().nonnegative(),
  /** Plain-words remarks, e.g. why a faster backend was not used. */
  notes: z.array(z.string().max(1024)).max(32),
  /** Whether this worker can carry all-reduces over the native data plane, and if not, why. */
  dataPlane: z.strictObject({ native: z.boolean(), why: z.string().max(1024).optional() }).optional(),
});
/** What a worker says of itself when it joins: process, host, versions, backend and device, memory, measured speed, notes. */
export type WorkerInfo = z.infer<typeof WorkerInfoSchema>;
