import { ProtocolError } from "../../../errors/errors";
import type { GradientSumSpec } from "../../../protocol/gradient-sum-spec";
import { AllReduceSum } from "./all-reduce-sum";
import type { GradientSum, ReplicaParts } from "./gradient-sum";
import { LayerShardsSum } from "./layer-shards-sum";
import { LocalRoundsSum } from "./local-rounds-sum";
import { ZeroOneSum } from "./zero-one-sum";

/** A summing scheme: how it is made from the replica's parts, and whether it sends the gradient in parts. */
interface SumKind {
  readonly make: (p: ReplicaParts) => GradientSum | Promise<GradientSum>;
  /** Whether the gradient goes in parts (reduce-scattered), which only an elementwise hook can carry. */
  readonly parts: boolean;
}

/** Every summing scheme a replica knows. Adding one: its file and its line here. */
const SUMS = new Map<string, SumKind>([
  ["all-reduce", { make: (p) => new AllReduceSum(p), parts: false }],
  ["zero-1", { make: (p) => new ZeroOneSum(p), parts: true }],
  ["zero-2", { make: (p) => new LayerShardsSum(p, 2), parts: true }],
  ["zero-3", { make: (p) => new LayerShardsSum(p, 3), parts: true }],
  ["local", { make: (p) => LocalRoundsSum.start(p, outerOf(p.load.sum)), parts: false }],
]);

/** The replica's summing scheme, refusing a hook it cannot carry (PowerSGD's factors cannot be reduce-scattered). */
export function gradientSumOf(p: ReplicaParts): Promise<GradientSum> {
  const kind = p.load.sum?.kind ?? "all-reduce";
  const sum = SUMS.get(kind);
  if (!sum)
    return Promise.reject(
      new ProtocolError(
        `the load names summing scheme "${kind}", which this worker does not know (it knows ${[...SUMS.keys()].join(", ")}): update the worker to the driver's version`,
      ),
    );
  if (sum.parts && !p.hook.elementwise) {
    return Promise.reject(
      new ProtocolError(
        `comm hook "${p.hook.kind}" sends the whole gradient at once, and ${kind} reduce-scatters it in parts: use the whole sum or a 16-bit hook`,
      ),
    );
  }
  return Promise.resolve(sum.make(p));
}

/** The outer optimizer of a "local" sum (the table reaches it only for one). */
function outerOf(sum: GradientSumSpec | undefined): Extract<GradientSumSpec, { kind: "local" }>["outer"] {
  if (sum?.kind !== "local") throw new ProtocolError('local rounds need the load\'s sum { kind: "local", outer }');
  return sum.outer;
}
