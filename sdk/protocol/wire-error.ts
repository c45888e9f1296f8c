import { z } from "zod";
import {
  ERROR_CLASSES,
  isErrorCode,
  isMeshtrainError,
  WorkerError,
  type ErrorDetails,
  type MeshtrainError,
} from "../errors/errors";

/** A failure as data: what crosses the wire instead of an exception. No stack traces leave a process. */
export const WireErrorSchema = z.strictObject({
  code: z.string().max(64),
  message: z.string().max(8192),
  hint: z.string().max(4096).optional(),
  details: z.record(z.string(), z.union([z.string().max(4096), z.number(), z.boolean()])).optional(),
  retryable: z.boolean().optional(),
});
export type WireError = z.infer<typeof WireErrorSchema>;

export function toWireError(err: unknown): WireError {
  if (isMeshtrainError(err)) {
    const details: Record<string, string | number | boolean> = {};
    for (const [k, v] of Object.entries(err.details)) if (v !== undefined) details[k] = v;
    return {
      code: err.code,
      message: err.summary,
      ...(err.hint !== undefined ? { hint: err.hint } : {}),
      details,
      retryable: err.retryable,
    };
  }
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return { code: "MT_ERR_WORKER", message: message.slice(0, 8192) };
}

/** Rebuilds the error class named by `code`; `extra` adds who reported it (rank, address). */
export function fromWireError(wire: WireError, extra: ErrorDetails = {}): MeshtrainError {
  const details: ErrorDetails = { ...(wire.details ?? {}), ...extra };
  const options = { hint: wire.hint, details, retryable: wire.retryable };
  if (isErrorCode(wire.code)) return new ERROR_CLASSES[wire.code](wire.message, options);
  return new WorkerError(`${wire.code}: ${wire.message}`, options);
}
