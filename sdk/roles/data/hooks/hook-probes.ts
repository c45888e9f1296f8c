import type { CommHookSpec } from "../../../protocol/comm-hook-spec";
import { timePowerSgd } from "./power-sgd-probe";

/** Times a hook's own work a step on gradients of these shapes, with no peers; ms. */
type HookProbe = (
  shapes: ReadonlyArray<readonly number[]>,
  spec: CommHookSpec,
  time: (run: () => Promise<void>) => Promise<number>,
) => Promise<number>;

/** The hooks whose own work a plan prices, each with its probe (fit()'s profile runs it). Adding one: its line here. */
const PROBES = new Map<string, HookProbe>([
  ["powersgd", (shapes, spec, time) => timePowerSgd(shapes, spec.kind === "powersgd" ? spec.rank : 1, time)],
]);

/** The probe of a hook of this kind, if its work is worth timing. */
export function hookProbe(kind: string): HookProbe | undefined {
  return PROBES.get(kind);
}
