import type { StepRecord } from "../metrics/records";
import type { CallbackRun } from "./fit-callbacks";

/**
 * A fit's callbacks as seen by a fit that may run steps again (a lost stage's place taken and
 * the stages loaded from the last checkpoint): each begin and end reaches the user's callbacks
 * once, the first time; an epoch's end gets the records of all its steps, `history()` being the
 * fit's whole history so far (steps run again replacing the first records).
 */
export function onceEach(run: CallbackRun, perEpoch: number, history: () => readonly StepRecord[]): CallbackRun {
  let trained = false;
  let epoch = 0;
  const seen = { epochBegun: -1, batchBegun: -1, batchEnded: -1, epochEnded: -1 };
  const first = (key: keyof typeof seen, at: number, call: () => Promise<void>): Promise<void> => {
    if (at <= seen[key]) return Promise.resolve();
    seen[key] = at;
    return call();
  };
  return new Proxy(run, {
    get(target, prop, receiver) {
      switch (prop) {
        case "trainBegin":
          return (p: Parameters<CallbackRun["trainBegin"]>[0]) =>
            trained ? Promise.resolve() : ((trained = true), target.trainBegin(p));
        case "epochBegin":
          return (e: number) => ((epoch = e), first("epochBegun", e, () => target.epochBegin(e)));
        case "batchBegin":
          return (b: number) => first("batchBegun", epoch * perEpoch + b, () => target.batchBegin(b));
        case "batchEnd":
          return (b: number, rec: StepRecord) =>
            first("batchEnded", epoch * perEpoch + b, () => target.batchEnd(b, rec));
        case "epochEnd":
          return (e: number, _steps: readonly StepRecord[], validation?: Record<string, number>) =>
            first("epochEnded", e, () => target.epochEnd(e, history(), validation));
        default:
          return Reflect.get(target, prop, receiver) as unknown;
      }
    },
  });
}
