import { StateError } from "../errors/errors";
import { TrainingRun } from "./training-run";

/**
 * A promise that says "did you forget await?" when it is used as what it resolves to: reading
 * `c.fit(...).throughput` (from JavaScript, or through `any`, where TypeScript cannot say so)
 * throws a StateError naming the call, instead of TypeError's "... is not a function". The
 * promise is the same one; `then`, `catch` and `finally` are untouched.
 */
export function withAwaitHint<T extends object>(
  promise: Promise<T>,
  call: string,
  members: readonly string[],
): Promise<T> {
  for (const name of members) {
    if (name in promise) continue;
    Object.defineProperty(promise, name, {
      enumerable: false,
      get(): never {
        throw new StateError(
          `${call} returned a Promise, not its result: did you forget await? (read .${name} of what it resolves to)`,
          {
            hint: `const run = await ${call}; then run.${name}`,
          },
        );
      },
    });
  }
  return promise;
}

/** A TrainingRun's members, its fields and its methods: what a fit's promise is mistaken for when await is forgotten. */
export const RUN_MEMBERS: readonly string[] = [
  ...new Set([
    ...["history", "plan", "workers", "seed", "epochs", "wallMs", "pushes", "departures", "serverVersions"],
    ...["membership", "byEpoch", "training", "dataPlane", "replicaStep", "logs", "memory"],
    ...Object.getOwnPropertyNames(TrainingRun.prototype).filter((n) => n !== "constructor"),
  ]),
];
