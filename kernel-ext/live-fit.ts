import type { FitObserver, FitStart, FitWatch } from "../sdk/metrics/observer";
import { defaultWarmup, throughput } from "../sdk/metrics/throughput";
import { figureBundle } from "../sdk/viz/bundles";
import { throughputFigure } from "../sdk/viz/throughput-figure";
import { newDisplayId, sendBundle } from "./tslab-bridge";
import { describeEnd, type FitEnd, type StepRecord } from "../sdk/metrics/records";
import { esc } from "../sdk/viz/escape";

/** Redraws at most this often: each update sends the whole figure. */
const INTERVAL_MS = 750;
/** While training, the title's rate is over this many last steps: it follows changes. */
const RECENT_STEPS = 10;

/**
 * The live plot's title, which says what its rate is: while training, the last steps' rate;
 * at the end, the whole run's after warm-up, the figure the run's summary shows.
 */
export function liveTitle(info: FitStart, history: readonly StepRecord[], end: "training" | FitEnd): string {
  const done = history.length;
  const loss = history[done - 1]?.loss.toFixed(4) ?? "-";
  if (end === "training") {
    const recent = Math.min(RECENT_STEPS, done);
    return `training: step ${done}/${info.totalSteps} on ${info.workers} worker(s), ${throughput(history.slice(-recent), 0).toFixed(0)} samples/s over the last ${recent} step(s), loss ${loss}`;
  }
  const warm = defaultWarmup(done);
  return `${describeEnd(end)}: ${done}/${info.totalSteps} steps on ${info.workers} worker(s), ${throughput(history, warm).toFixed(0)} samples/s over the run after ${warm} warm-up step(s), loss ${loss}`;
}

/** A live throughput plot under the cell while a fit runs: one output, updated in place. */
export const liveFitObserver: FitObserver = {
  start(info: FitStart): FitWatch {
    const id = newDisplayId();
    const history: StepRecord[] = [];
    let shown = false;
    let last = 0;
    const draw = (state: Parameters<typeof liveTitle>[2]): void => {
      sendBundle(figureBundle(throughputFigure(history, liveTitle(info, history, state))), {
        displayId: id,
        update: shown,
      });
      shown = true;
      last = Date.now();
    };
    // Shown now, while the cell that called fit() is the one running: every later drawing updates
    // this display by its id, so it stays under that cell even when another cell runs meanwhile.
    const line = (text: string): void => {
      sendBundle({ "text/plain": text, "text/html": `<p>${esc(text)}</p>` }, { displayId: id, update: shown });
      shown = true;
    };
    line(`meshtrain: fit starting, ${info.totalSteps} steps on ${info.workers} worker(s)`);
    return {
      step(record) {
        history.push(record);
        if (Date.now() - last >= INTERVAL_MS) draw("training");
      },
      end(how) {
        if (history.length > 0) draw(how);
        else line(`meshtrain: fit ${describeEnd(how)} before its first step`);
      },
    };
  },
};
