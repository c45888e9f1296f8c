import type { DataParallelPlan } from "../../plan/plans";
import { dataPlacementSvg } from "../../viz/placement";
import { refusePlacement, type Strategy } from "../strategy";
import { fitDataParallel } from "./driver-runtime";
import { explainDataPlan, formatDataPlan, planDataParallel } from "./planner";
import { DataReplica } from "./replica-role";
import { measuredSlowerThanOne } from "../../plan/slower-than-one";
import { runOverlapLine } from "./overlap-lines";

/** Synchronous data parallelism: every worker a replica of the whole model, gradients summed by ring all-reduce. */
export const dataStrategy: Strategy<DataParallelPlan> = {
  family: "replicas",
  plan: planDataParallel,
  replan: (spec, model, plan, o) => planDataParallel(spec, model, { ...o, reasons: plan.reasons }),
  place: () => refusePlacement("data parallelism"),
  format: formatDataPlan,
  explain: explainDataPlan,
  draw: dataPlacementSvg,
  fit: fitDataParallel,
  describe: (run, summary) => {
    const worst = summary.stragglers.worst;
    const slower = run.plan.strategy === "data"
      ? measuredSlowerThanOne({ workers: summary.workers.length, gradientBytes: run.plan.gradientBytes, measuredSteps: summary.steps - summary.warmupSteps, medianStepMs: summary.medianStepMs, ranks: summary.workers, ...(run.plan.prediction?.oneWorker ? { oneWorkerMs: run.plan.prediction.oneWorker.stepMs } : {}) })
      : null;
    return {
      label: `data, ${run.workers.length} worker(s)`,
      lines: [
        ...(worst ? [`rank ${worst.rank} finished computing last in ${worst.steps} of ${worst.of} steps (median lead ${summary.stragglers.medianLeadMs.toFixed(1)} ms): the one the others waited for`] : []),
        ...(run.plan.strategy === "data" && run.workers.length > 1 ? [runOverlapLine(run.plan.overlap, run.dataPlane, run.replicaStep)] : []),
        ...(slower ? [slower] : []),
      ],
      figures: () => [],
    };
  },
  roles: { replica: (msg, attachments, env) => DataReplica.load(msg, attachments, env) },
};
