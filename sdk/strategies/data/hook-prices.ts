import { formatBytes } from "../../plan/memory";
import type { ModelSummary } from "../../plan/model-summary";
import type { ModelProfile } from "../../plan/profile";
import type { ReplicaWork, Speeds } from "../../plan/predict";
import type { CommHookSpec } from "../../protocol/comm-hook-spec";
import { powerSgdWork } from "./power-sgd-work";

/** What a comm hook costs a plan: each kind says it once (the worker's side is roles/data/hooks/). */
export interface HookPrice {
  /** Bytes a step's gradient puts on the ring, counted as one all-reduce's. */
  readonly wireBytes: number;
  /** All-reduces a step's gradient takes. */
  readonly allReduces: number;
  /** Bytes each replica carries between steps (what rounding or the approximation left out). */
  readonly carriedBytes: number;
  /** Why the gradient cannot go in buckets or shards, where it cannot (it needs the whole gradient at once). */
  readonly whole: string | null;
  /** How the plan's text names the wire format (null: float32). */
  readonly wireName: string | null;
  /** What explain() says of it (null: nothing). */
  readonly line: string | null;
  /** Its own work in a replica's step, where it has any. */
  work(profile: ModelProfile | undefined, speeds: Speeds): ReplicaWork | null;
}

/** The hook strategy("data")'s compression option asks for (null: none). */
export function hookOfOptions(
  compression: "fp16" | "bf16" | { name: "powersgd"; rank: number } | undefined,
): CommHookSpec | null {
  if (compression === undefined) return null;
  return typeof compression === "string" ? { kind: compression } : { kind: "powersgd", rank: compression.rank };
}

/** The price of `hook` (null: the gradient whole, in float32) for `model`. */
export function hookPrice(hook: CommHookSpec | null, model: ModelSummary): HookPrice {
  const gradientBytes = model.trainableParamCount * 4;
  if (!hook)
    return {
      wireBytes: gradientBytes,
      allReduces: 1,
      carriedBytes: 0,
      whole: null,
      wireName: null,
      line: null,
      work: () => null,
    };
  if (hook.kind === "powersgd") {
    const low = lowRankBytes(model, hook.rank);
    return {
      wireBytes: low,
      allReduces: 2,
      carriedBytes: powerSgdCarriedBytes(model, hook.rank),
      whole: "PowerSGD all-reduces P and Q after the backward pass",
      wireName: `PowerSGD rank ${hook.rank}`,
      line: `compression powersgd, rank ${hook.rank}: each gradient of two or more dimensions goes as P (n x r) and Q (m x r) in two all-reduces, ${formatBytes(low)} instead of ${formatBytes(gradientBytes)}; vectors go whole; each worker keeps what the approximation left out for its next step (error feedback)`,
      work: (profile, speeds) => powerSgdWork(model, hook.rank, profile, speeds),
    };
  }
  return {
    wireBytes: gradientBytes / 2,
    allReduces: 1,
    carriedBytes: gradientBytes,
    whole: null,
    wireName: `${hook.kind} with error feedback`,
    line: compressionLine(hook.kind),
    work: () => null,
  };
}

/** Bytes of PowerSGD's two all-reduces: r (n + m) per matrix (m its last dimension), vectors whole. */
export function lowRankBytes(model: ModelSummary, rank: number): number {
  return (
    4 *
    model.variables.reduce((a, v) => {
      const size = v.shape.reduce((x, d) => x * d, 1);
      if (v.shape.length < 2) return a + size;
      const m = v.shape[v.shape.length - 1]!;
      const r = Math.min(rank, size / m, m);
      return a + r * (size / m + m);
    }, 0)
  );
}

/**
 * What PowerSGD keeps between steps (roles/data/power-sgd.ts): per matrix its error and the
 * buffer the next step's error is written into (each n x m) and the shared Q (m x r), and one
 * scratch the size of the largest matrix.
 */
function powerSgdCarriedBytes(model: ModelSummary, rank: number): number {
  const matrices = model.variables
    .filter((v) => v.shape.length >= 2)
    .map((v) => {
      const size = v.shape.reduce((x, d) => x * d, 1);
      const m = v.shape[v.shape.length - 1]!;
      return { size, q: m * Math.min(rank, size / m, m) };
    });
  const values = matrices.reduce((a, x) => a + 2 * x.size + x.q, 0) + Math.max(0, ...matrices.map((x) => x.size));
  return 4 * values;
}

/** What 16-bit compression costs and keeps, said where a plan (data or parameter servers) is explained. */
export function compressionLine(c: "fp16" | "bf16"): string {
  const kept =
    c === "fp16"
      ? "11 significant bits, values up to 65504 (a step whose gradient or sum exceeds it is dropped)"
      : "8 significant bits, float32's range";
  return `compression ${c}: gradients travel as 16-bit floats (${kept}); each worker carries its rounding error to its next step (error feedback), and converting costs CPU time on both ends of every hop`;
}
