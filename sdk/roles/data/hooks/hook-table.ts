import { ProtocolError } from "../../../errors/errors";
import type { CommHookSpec } from "../../../protocol/comm-hook-spec";
import type { LoadedReplica } from "../../../compute/loaded-replica";
import type { CommHook } from "./comm-hook";
import { halfHook } from "./half-hook";
import { powerSgdHook } from "./power-sgd-hook";
import { wholeHook } from "./whole-hook";

/** Makes a replica's hook from its load's spec (the spec's other fields are the hook's options). */
export type CommHookFactory = (spec: { readonly kind: string }, r: LoadedReplica) => CommHook;

/** Every comm hook a worker knows, by the kind a load names. Adding one: its file and its line here. */
const HOOKS = new Map<string, CommHookFactory>([
  ["none", () => wholeHook()],
  ["fp16", (_s, r) => halfHook("fp16", r.gradientLength)],
  ["bf16", (_s, r) => halfHook("bf16", r.gradientLength)],
  [
    "powersgd",
    (s, r) =>
      powerSgdHook(
        r.vars.map((v) => v.shape),
        (s as Extract<CommHookSpec, { kind: "powersgd" }>).rank,
      ),
  ],
]);

/** A hook added at run time (a test's, or a worker module's), under a kind no built-in hook has. */
export function addCommHook(kind: string, make: CommHookFactory): void {
  if (HOOKS.has(kind)) throw new ProtocolError(`a comm hook "${kind}" is already registered`);
  HOOKS.set(kind, make);
}

/** The hook a load names (none: the gradient summed whole). */
export function commHookOf(spec: { readonly kind: string } | undefined, r: LoadedReplica): CommHook {
  const kind = spec?.kind ?? "none";
  const make = HOOKS.get(kind);
  if (!make)
    throw new ProtocolError(
      `the load names comm hook "${kind}", which this worker does not know (it knows ${[...HOOKS.keys()].join(", ")}): update the worker to the driver's version`,
    );
  return make(spec ?? { kind }, r);
}
