import type { GradientSumSpec } from "../../../protocol/gradient-sum-spec";
import type { MessageOf } from "../../../protocol/messages";
import { timeLocalSync } from "./local-rounds-probe";

/** Times a summing scheme's own work (a sync's, for local rounds) on the profile's model, with no peers; ms. */
type SumProbe = (
  msg: MessageOf<"profile">,
  spec: GradientSumSpec,
  time: (run: () => Promise<void>) => Promise<number>,
) => Promise<number | undefined>;

/** The schemes whose own work a plan prices, each with its probe (fit()'s profile runs it). Adding one: its line here. */
const PROBES = new Map<string, SumProbe>([
  [
    "local",
    (msg, spec, time) => (spec.kind === "local" ? timeLocalSync(msg, spec.outer, time) : Promise.resolve(undefined)),
  ],
]);

/** The probe of a scheme of this kind, if its work is worth timing. */
export function sumProbe(kind: string): SumProbe | undefined {
  return PROBES.get(kind);
}
