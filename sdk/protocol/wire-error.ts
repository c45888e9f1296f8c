import { z } from "zod";
import {
  ERROR_CLASSES,
  isErrorCode,
  isMeshtrainError,
  WorkerError,
  type ErrorDetails,
  type MeshtrainError,
} from "../errors/errors";

/**
 * A failure as data: what crosses the wire instead of an exception, with the failure that caused
 * it (a few levels deep). An error that is not meshtrain's own (an op that threw inside a user's
 * layer) keeps its stack, trimmed, since that is where the user looks for the cause; meshtrain's
 * own errors say what happened in their message and carry none.
 */
export interface WireError {
  code: string;
  message: string;
  hint?: string | undefined;
  details?: Record<string, string | number | boolean> | undefined;
  retryable?: boolean | undefined;
  stack?: string | undefined;
  cause?: WireError | undefined;
}
/** Stack text kept: a few dozen frames. */
const MAX_STACK = 4096;

export const WireErrorSchema: z.ZodType<WireError> = z.strictObject({
  code: z.string().max(64),
  message: z.string().max(8192),
  hint: z.string().max(4096).optional(),
  details: z.record(z.string(), z.union([z.string().max(4096), z.number(), z.boolean()])).optional(),
  retryable: z.boolean().optional(),
  stack: z.string().max(MAX_STACK).optional(),
  get cause() {
    return WireErrorSchema.optional();
  },
});

/** Errors rebuilt here whose stack is the one from where they were thrown: sent on again with it. */
const thrownElsewhere = new WeakSet<Error>();

/** Causes carried across the wire, counting the error itself: enough to see why, bounded for frames. */
const MAX_CAUSES = 4;

export function toWireError(err: unknown): WireError {
  return wireErrorAt(err, 1);
}

function wireErrorAt(err: unknown, depth: number): WireError {
  const cause =
    err instanceof Error && err.cause !== undefined && depth < MAX_CAUSES
      ? { cause: wireErrorAt(err.cause, depth + 1) }
      : {};
  if (isMeshtrainError(err)) {
    const details: Record<string, string | number | boolean> = {};
    for (const [k, v] of Object.entries(err.details)) if (v !== undefined) details[k] = v;
    return {
      code: err.code,
      message: err.summary,
      ...(err.hint !== undefined ? { hint: err.hint } : {}),
      details,
      retryable: err.retryable,
      ...(thrownElsewhere.has(err) && err.stack ? { stack: err.stack.slice(0, MAX_STACK) } : {}),
      ...cause,
    };
  }
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  const stack = err instanceof Error && typeof err.stack === "string" ? { stack: err.stack.slice(0, MAX_STACK) } : {};
  return { code: "MT_ERR_WORKER", message: message.slice(0, 8192), ...stack, ...cause };
}

/** Rebuilds the error class named by `code`; `extra` adds who reported it (rank, address). */
export function fromWireError(wire: WireError, extra: ErrorDetails = {}): MeshtrainError {
  const details: ErrorDetails = { ...(wire.details ?? {}), ...extra };
  const options = {
    hint: wire.hint,
    details,
    retryable: wire.retryable,
    ...(wire.cause ? { cause: fromWireError(wire.cause) } : {}),
  };
  const err = isErrorCode(wire.code)
    ? new ERROR_CLASSES[wire.code](wire.message, options)
    : new WorkerError(`${wire.code}: ${wire.message}`, options);
  // The stack where it was thrown, on the worker: more use than where it was rebuilt.
  if (wire.stack !== undefined) {
    err.stack = wire.stack;
    thrownElsewhere.add(err);
  }
  return err;
}
