import { z } from "zod";

/**
 * The device a worker process is given when it starts: the driver sets it for local workers
 * (.workers(n): the CPU; .gpus(n): one GPU each), `meshtrain worker --gpu k` for itself. A worker
 * without one picks its backend itself (backend "auto").
 */
export const DeviceAssignmentSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("cpu") }),
  /** A CUDA device for tfjs-node-gpu (its index, as CUDA_VISIBLE_DEVICES names it). */
  z.strictObject({ kind: z.literal("cuda"), index: z.string().min(1).max(16) }),
  /** A WebGPU adapter by its device name (Dawn's Node bindings select by name); software: a CPU rasteriser, taken only when asked for. */
  z.strictObject({ kind: z.literal("webgpu"), adapter: z.string().max(256), software: z.boolean() }),
]);
export type DeviceAssignment = z.infer<typeof DeviceAssignmentSchema>;

/** The environment variable that carries it. */
export const DEVICE_ENV = "MESHTRAIN_DEVICE";

/** The assignment in `env`, or null; a malformed one is said, not guessed at. */
export function deviceFromEnv(env: NodeJS.ProcessEnv = process.env): DeviceAssignment | null {
  const raw = env[DEVICE_ENV];
  if (!raw) return null;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(`${DEVICE_ENV} is not JSON: ${raw.slice(0, 80)}`);
  }
  const r = DeviceAssignmentSchema.safeParse(json);
  if (!r.success)
    throw new Error(`${DEVICE_ENV} does not name a device: ${r.error.issues.map((i) => i.message).join("; ")}`);
  return r.data;
}
