import type { FitObserver, FitStart, FitWatch } from "../sdk/metrics/observer";
import { figureBundle } from "../sdk/viz/bundles";
import { throughputFigure } from "../sdk/viz/throughput-figure";
import { newDisplayId, sendBundle } from "./tslab-bridge";
import type { StepRecord } from "../sdk/metrics/records";

/** Redraws at most this often: each update sends the whole figure. */
const INTERVAL_MS = 750;

/** A live throughput plot under the cell while a fit runs: one output, updated in place. */
export const liveFitObserver: FitObserver = {
  start(info: FitStart): FitWatch {
    const id = newDisplayId();
    const history: StepRecord[] = [];
    let shown = false;
    let last = 0;
    const draw = (final: boolean, error?: unknown): void => {
      const done = history.length;
      const recent = history.slice(-10);
      const ms = recent.reduce((a, s) => a + s.ms, 0);
      const rate = ms > 0 ? (recent.reduce((a, s) => a + s.samples, 0) * 1000) / ms : 0;
      const state = error ? "stopped by an error" : final ? "done" : "training";
      const title = `${state}: step ${done}/${info.totalSteps} on ${info.workers} worker(s), ${rate.toFixed(0)} samples/s, loss ${history[done - 1]?.loss.toFixed(4) ?? "-"}`;
      sendBundle(figureBundle(throughputFigure(history, title)), { displayId: id, update: shown });
      shown = true;
      last = Date.now();
    };
    return {
      step(record) {
        history.push(record);
        if (Date.now() - last >= INTERVAL_MS) draw(false);
      },
      end(error) {
        if (history.length > 0 || shown) draw(true, error);
      },
    };
  },
};
