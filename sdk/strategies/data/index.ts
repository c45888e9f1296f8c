import type { DataParallelPlan } from "../../plan/plans";
import { zeroStage } from "../../plan/memory";
import { dataPlacementSvg } from "../../viz/data-placement";
import { refusePlacement, type Strategy } from "../strategy";
import { fitDataParallel } from "./driver-runtime";
import { planDataParallel } from "./planner";
import { explainDataPlan, formatDataPlan } from "./plan-text";
import { measuredSlowerThanOne } from "../../plan/slower-than-one";
import { runOverlapLine } from "./overlap-lines";
import { sumOf } from "./replica-load";
import { checkDataOptions, DataOptionsSchema, type DataOptions } from "./options";

/** Synchronous data parallelism: every worker a replica of the whole model, gradients summed by ring all-reduce. */
export const dataStrategy: Strategy<DataOptions, DataParallelPlan> & { options: typeof DataOptionsSchema } = {
  options: DataOptionsSchema,
  family: "replicas",
  servers: "refused",
  slowdown: true,
  spares: true,
  profiled: "step",
  check: checkDataOptions,
  // Its plans price the all-reduce by the ring the steps use; elastic rings change with membership.
  probesRing: (o, workers) => !o.elastic && workers >= 2,
  plan: planDataParallel,
  owns: (plan): plan is DataParallelPlan => plan.strategy === "data",
  replan: (o, spec, model, plan, po) =>
    planDataParallel(o ?? DataOptionsSchema.parse({}), spec, model, { ...po, reasons: plan.reasons }),
  place: () => refusePlacement("data parallelism"),
  format: formatDataPlan,
  explain: explainDataPlan,
  draw: dataPlacementSvg,
  fit: fitDataParallel,
  // The hook's and the summing scheme's own work (PowerSGD's factors, a local-SGD sync), timed where they have a probe.
  probes: (plan) => {
    const sum = sumOf(plan);
    return { ...(plan.hook ? { hook: plan.hook } : {}), ...(sum ? { sum } : {}) };
  },
  describe: (run, plan, summary) => {
    const worst = summary.stragglers.worst;
    const slower = measuredSlowerThanOne({
      workers: summary.workers.length,
      gradientBytes: plan.gradientBytes,
      measuredSteps: summary.steps - summary.warmupSteps,
      medianStepMs: summary.medianStepMs,
      ranks: summary.workers,
      ...(plan.prediction?.oneWorker?.timed ? { oneWorkerMs: plan.prediction.oneWorker.stepMs } : {}),
    });
    return {
      label: `data${plan.shard ? `, ZeRO-${zeroStage(plan.shard)}` : ""}, ${run.workers.length} worker(s)`,
      lines: [
        ...(worst
          ? [
              `rank ${worst.rank} finished computing last in ${worst.steps} of ${worst.of} steps (median lead ${summary.stragglers.medianLeadMs.toFixed(1)} ms): the one the others waited for`,
            ]
          : []),
        ...(run.workers.length > 1
          ? [runOverlapLine(plan.overlap, run.dataPlane, run.replicaStep, run.overlapTrial)]
          : []),
        ...(slower ? [slower] : []),
      ],
      figures: () => [],
    };
  },
  roles: ["replica"],
};
