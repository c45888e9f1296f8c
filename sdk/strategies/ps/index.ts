import type { RunRecord } from "../../metrics/records";
import type { PsPlan } from "../../plan/plans";
import { stalenessFigure } from "../../viz/ps-figures";
import { psPlacementSvg } from "../../viz/ps-placement";
import { refusePlacement, type Strategy } from "../strategy";
import { fitServersRecovering } from "./servers-recovering";
import { explainPsPlan, formatPsPlan, planParameterServers } from "./planner";
import { checkPsOptions, PsOptionsSchema, type PsOptions } from "./options";
import { median } from "../../util/median";

/** Parameter servers, sync or async: servers hold the parameters and apply the optimizer; workers pull, compute and push. */
export const psStrategy: Strategy<PsOptions, PsPlan> & { options: typeof PsOptionsSchema } = {
  options: PsOptionsSchema,
  family: "servers",
  servers: "required",
  slowdown: true,
  // Sync fits that write checkpoints: a lost server's (or, without elastic, worker's) place.
  spares: true,
  // Its plans predict from the replica's step timed alone (no layer times).
  profiled: "step",
  check: checkPsOptions,
  probesRing: () => false,
  plan: planParameterServers,
  owns: (plan): plan is PsPlan => plan.strategy === "ps",
  replan: (o, spec, model, plan, po) =>
    planParameterServers(
      o ?? {
        mode: plan.mode,
        ...(plan.staleness !== null ? { staleness: plan.staleness } : {}),
        ...(plan.compression ? { compression: plan.compression } : {}),
        ...(plan.elastic ? { elastic: { ...plan.elastic } } : {}),
      },
      spec,
      model,
      { ...po, reasons: plan.reasons },
    ),
  place: () => refusePlacement("parameter servers"),
  format: formatPsPlan,
  explain: explainPsPlan,
  draw: psPlacementSvg,
  fit: fitServersRecovering,
  describe: (run, plan) => {
    const label = `ps ${plan.mode}${plan.staleness !== null ? ` (k=${plan.staleness})` : ""}, ${run.workers.length} worker(s)`;
    const pushes = run.ps?.pushes ?? [];
    return {
      label,
      lines: psLines(run),
      figures: () =>
        pushes.length > 0 && plan.mode === "async"
          ? [{ title: "Staleness", figure: stalenessFigure([{ name: label, pushes }]) }]
          : [],
    };
  },
  roles: ["ps-worker", "ps-server"],
};

/** Pushes, staleness and departures, in words. */
function psLines(run: RunRecord): string[] {
  const p = run.ps?.pushes ?? [];
  if (p.length === 0) return [];
  const st = p.map((x) => x.staleness);
  const perRank = new Map<number, number>();
  for (const x of p) perRank.set(x.rank, (perRank.get(x.rank) ?? 0) + 1);
  const lines = [
    `${p.length} pushes; staleness (updates missed between pull and push): median ${median(st)}, max ${Math.max(...st)}; most steps ahead of the slowest: ${Math.max(...p.map((x) => x.lead))}`,
    `pushes per rank: ${[...perRank.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([r, c]) => `rank ${r} ${c}`)
      .join(", ")}; servers applied ${(run.ps?.serverVersions ?? []).join(" / ")} update(s)`,
  ];
  for (const d of run.ps?.departures ?? []) {
    lines.push(
      `rank ${d.rank} left at ${(d.atMs / 1000).toFixed(1)} s (step ${d.step}): ${d.cause}; ${d.requeued} slice(s) handed to the others, ${d.alreadyApplied} already applied${d.partial ? `, ${d.partial} applied by only some servers` : ""}`,
    );
  }
  return lines;
}
