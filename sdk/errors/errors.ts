/**
 * Every failure meshtrain reports is a MeshtrainError with a stable `code`, structured `details`
 * and a message that ends with what to do next. Errors cross process boundaries as data
 * (see wire-error.ts) and are rebuilt on the driver with the same class.
 *
 * `instanceof` is symbol-based: re-running a notebook cell can load this module twice, and an
 * error made by one copy must still be recognised by the other.
 */

const BRAND = Symbol.for("meshtrain.error");

/** The stable code of each kind of failure (docs/errors.md lists them with their causes and fixes). */
export type ErrorCode =
  | "MT_ERR_CONFIG"
  | "MT_ERR_LAUNCH"
  | "MT_ERR_AUTH"
  | "MT_ERR_PROTOCOL"
  | "MT_ERR_FRAME_TOO_LARGE"
  | "MT_ERR_WORKER_LOST"
  | "MT_ERR_TIMEOUT"
  | "MT_ERR_COLLECTIVE"
  | "MT_ERR_MODEL"
  | "MT_ERR_PLAN"
  | "MT_ERR_DATA"
  | "MT_ERR_BACKEND"
  | "MT_ERR_STATE"
  | "MT_ERR_WORKER"
  | "MT_ERR_REPLICAS_DIVERGED"
  | "MT_ERR_CHECKPOINT"
  | "MT_ERR_NON_FINITE"
  | "MT_ERR_ABORTED";

/** Who and where, when it is known. Never holds secrets (the token is never put here). */
export interface ErrorDetails {
  rank?: number;
  address?: string;
  step?: number;
  /** What a timed-out wait was waiting for, e.g. "stepDone from rank 2". */
  waitingFor?: string;
  [key: string]: string | number | boolean | undefined;
}

/** What a MeshtrainError is made with besides its code and statement. */
export interface MeshtrainErrorOptions {
  hint?: string;
  details?: ErrorDetails;
  cause?: unknown;
  retryable?: boolean;
}

/** Every failure meshtrain reports: a stable `code`, `details` (who, where, which step), and a `hint` saying what to do. */
export class MeshtrainError extends Error {
  static readonly code: ErrorCode | undefined = undefined;
  readonly code: ErrorCode;
  /** What to do next; also appended to `message` after "help:". */
  readonly hint: string | undefined;
  readonly details: ErrorDetails;
  readonly retryable: boolean;
  /** The short statement without the hint, as it travels on the wire. */
  readonly summary: string;

  /** An error of kind `code`: `summary` says what went wrong, `options.hint` what to do next (appended to the message after "help:"). */
  constructor(code: ErrorCode, summary: string, options: MeshtrainErrorOptions = {}) {
    super(options.hint ? `${summary}\nhelp: ${options.hint}` : summary, { cause: options.cause });
    this.code = code;
    this.summary = summary;
    this.hint = options.hint;
    this.details = { ...(options.details ?? {}) };
    this.retryable = options.retryable ?? false;
    this.name = new.target.name;
    Object.defineProperty(this, BRAND, { value: true, enumerable: false });
  }

  /** Symbol-based: an error made by another copy of this module (a re-run notebook cell) is still recognised; a subclass matches its own code. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (typeof value !== "object" || value === null) return false;
    if ((value as Record<symbol, unknown>)[BRAND] !== true) return false;
    // The base class matches every meshtrain error; a subclass matches its own code.
    const wanted = (this as unknown as { code: ErrorCode | undefined }).code;
    return wanted === undefined || (value as { code?: unknown }).code === wanted;
  }
}

/** True for any meshtrain error, whichever copy of the module made it. */
export function isMeshtrainError(value: unknown): value is MeshtrainError {
  return value instanceof MeshtrainError;
}

type Opts = MeshtrainErrorOptions;

/** A builder, fit or plan option that cannot work; says the arithmetic. */
export class ConfigError extends MeshtrainError {
  static override readonly code = "MT_ERR_CONFIG" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_CONFIG", summary, o);
  }
}

/** A local worker did not start, or a remote one could not be reached. */
export class LaunchError extends MeshtrainError {
  static override readonly code = "MT_ERR_LAUNCH" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_LAUNCH", summary, o);
  }
}

/** A connection did not prove it knows the cluster token. */
export class AuthError extends MeshtrainError {
  static override readonly code = "MT_ERR_AUTH" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_AUTH", summary, o);
  }
}

/** A frame that is not a valid meshtrain message, or a message at the wrong time. */
export class ProtocolError extends MeshtrainError {
  static override readonly code = "MT_ERR_PROTOCOL" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_PROTOCOL", summary, o);
  }
}

/** A message or tensor frame above the maximum frame size either side accepts (see `.limits()`). */
export class FrameTooLargeError extends MeshtrainError {
  static override readonly code = "MT_ERR_FRAME_TOO_LARGE" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_FRAME_TOO_LARGE", summary, o);
  }
}

/** A worker exited, closed its connection or went silent past the heartbeat timeout. */
export class WorkerLostError extends MeshtrainError {
  static override readonly code = "MT_ERR_WORKER_LOST" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_WORKER_LOST", summary, o);
  }
}

/** A wait ran past its limit; `details.waitingFor` names who was waited for. */
export class TimeoutError extends MeshtrainError {
  static override readonly code = "MT_ERR_TIMEOUT" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_TIMEOUT", summary, o);
  }
}

/** A collective (all-reduce) could not complete: a peer link closed or sent the wrong data. */
export class CollectiveError extends MeshtrainError {
  static override readonly code = "MT_ERR_COLLECTIVE" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_COLLECTIVE", summary, o);
  }
}

/** The model cannot be sent, built or trained as asked. */
export class ModelError extends MeshtrainError {
  static override readonly code = "MT_ERR_MODEL" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_MODEL", summary, o);
  }
}

/** A plan that cannot be priced: a layer's cost, timed or from its FLOPs, is not a finite number of milliseconds. */
export class PlanError extends MeshtrainError {
  static override readonly code = "MT_ERR_PLAN" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_PLAN", summary, o);
  }
}

/** A dataset whose shapes or sizes do not fit the model or the batch. */
export class DataError extends MeshtrainError {
  static override readonly code = "MT_ERR_DATA" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_DATA", summary, o);
  }
}

/** The requested compute backend is not available on a worker. */
export class BackendError extends MeshtrainError {
  static override readonly code = "MT_ERR_BACKEND" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_BACKEND", summary, o);
  }
}

/** An operation that the cluster's current state does not allow (closed, already fitting). */
export class StateError extends MeshtrainError {
  static override readonly code = "MT_ERR_STATE" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_STATE", summary, o);
  }
}

/** An unexpected failure inside a worker; `cause` holds what the worker reported. */
export class WorkerError extends MeshtrainError {
  static override readonly code = "MT_ERR_WORKER" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_WORKER", summary, o);
  }
}

/** Replicas that should hold identical weights do not. */
export class ReplicaDivergenceError extends MeshtrainError {
  static override readonly code = "MT_ERR_REPLICAS_DIVERGED" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_REPLICAS_DIVERGED", summary, o);
  }
}

/** A checkpoint that is missing, partial, corrupt (checksums), or made for another model or run. */
export class CheckpointError extends MeshtrainError {
  static override readonly code = "MT_ERR_CHECKPOINT" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_CHECKPOINT", summary, o);
  }
}

/** A step's loss, gradient or input held NaN or Infinity (see fit option nonFinite). */
export class NonFiniteError extends MeshtrainError {
  static override readonly code = "MT_ERR_NON_FINITE" as const;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_NON_FINITE", summary, o);
  }
}

/**
 * A fit stopped on request (its AbortSignal, Ctrl-C or a notebook interrupt, cluster.close()) at
 * a step boundary: named "AbortError" as fetch's is. `run` is what was recorded up to there
 * (a TrainingRun when Cluster.fit rejects with it).
 */
export class AbortError<Run = unknown> extends MeshtrainError {
  static override readonly code = "MT_ERR_ABORTED" as const;
  run: Run | undefined = undefined;
  /** `summary`: what went wrong; `o.hint`: what to do next; `o.details`: who and where; `o.cause`: the error behind it. */
  constructor(summary: string, o?: Opts) {
    super("MT_ERR_ABORTED", summary, o);
  }
}

/** A meshtrain error class, made from its statement and options. */
export type ErrorClass = new (summary: string, o?: MeshtrainErrorOptions) => MeshtrainError;

/** Each error code's class: how an error that crossed the wire is rebuilt as the same class on the driver. */
export const ERROR_CLASSES: Readonly<Record<ErrorCode, ErrorClass>> = Object.freeze({
  MT_ERR_CONFIG: ConfigError,
  MT_ERR_LAUNCH: LaunchError,
  MT_ERR_AUTH: AuthError,
  MT_ERR_PROTOCOL: ProtocolError,
  MT_ERR_FRAME_TOO_LARGE: FrameTooLargeError,
  MT_ERR_WORKER_LOST: WorkerLostError,
  MT_ERR_TIMEOUT: TimeoutError,
  MT_ERR_COLLECTIVE: CollectiveError,
  MT_ERR_MODEL: ModelError,
  MT_ERR_PLAN: PlanError,
  MT_ERR_DATA: DataError,
  MT_ERR_BACKEND: BackendError,
  MT_ERR_STATE: StateError,
  MT_ERR_WORKER: WorkerError,
  MT_ERR_REPLICAS_DIVERGED: ReplicaDivergenceError,
  MT_ERR_CHECKPOINT: CheckpointError,
  MT_ERR_NON_FINITE: NonFiniteError,
  MT_ERR_ABORTED: AbortError,
});

/** Whether `value` is one of meshtrain's error codes. */
export function isErrorCode(value: string): value is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CLASSES, value);
}
