import type { ResolvedFitOptions } from "./fit-options";
import { NonFiniteError } from "../errors/errors";
import type { NonFiniteReport, StepRecord } from "../metrics/records";
import { FitAborted } from "./fit-stop";

/** With nonFinite "stop", a step where a worker found NaN or Infinity ends the fit (the workers dropped its update). */
export function nonFiniteStop(
  rec: StepRecord,
  o: Pick<ResolvedFitOptions, "nonFinite" | "optimizer">,
): FitAborted | undefined {
  if (!rec.nonFinite || rec.nonFinite.length === 0 || o.nonFinite !== "stop") return undefined;
  return new FitAborted(nonFiniteError(rec.step, rec.nonFinite, o.optimizer.learningRate));
}

export function nonFiniteError(step: number, found: readonly NonFiniteReport[], learningRate: number): NonFiniteError {
  const first = found.find((f) => f.where === "input") ?? found.find((f) => f.where === "loss") ?? found[0]!;
  const ranks = [...new Set(found.filter((f) => f.where === first.where).map((f) => f.rank))].join(", ");
  const where =
    first.where === "input"
      ? "the input batch"
      : first.where === "loss"
        ? "the loss"
        : first.where === "compression"
          ? `the all-reduced gradient of ${first.variable ?? "a variable"}, compressed to 16 bits,`
          : `the gradient of ${first.variable ?? "a variable"}`;
  const hint =
    first.where === "input"
      ? "the data holds NaN or Infinity: clean or clip it before training (meshtrain checks datasets held in memory before fit; this slice was read by the worker)"
      : first.where === "compression"
        ? `every replica's gradient was finite, but their sum exceeded what the 16-bit format holds (fp16: 65504): use compression "bf16" (float32's range), lower the learning rate (it is ${learningRate}), or pass fit({ nonFinite: "skip" }) to drop such steps`
        : `training diverged: lower the learning rate (it is ${learningRate}), normalise the inputs, or pass fit({ nonFinite: "skip" }) to drop such steps and go on`;
  return new NonFiniteError(
    `step ${step}: ${where} held NaN or Infinity on rank(s) ${ranks}; no worker applied that step's update`,
    {
      hint,
      details: { step, ranks, where: first.where, ...(first.variable ? { variable: first.variable } : {}) },
    },
  );
}
