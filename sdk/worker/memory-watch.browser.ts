import * as tf from "@tensorflow/tfjs";
import type { WorkerMemory } from "../protocol/worker-memory";

/**
 * memory-watch.ts for a browser tab: a page cannot see its process's resident set, so a tab
 * reports what TF.js counts (its tensors' bytes), the most it counted after a step, and says so
 * (peakFrom "tensors").
 */
export class MemoryWatch {
  private idleBytes = 0;
  private loadPeak = 0;
  private peak = 0;

  /** A tab's communication thread has nothing to collect that TF.js counts. */
  constructor(_collectCommGarbage: () => Promise<void>) {}

  /** Before the load, the weights that came with it are not yet tensors: TF.js's count is the tab's without a model. */
  async start(_arrivedBytes: number): Promise<void> {
    this.idleBytes = this.loadPeak = this.peak = tf.memory().numBytes;
  }

  /** A tab's tensors are freed as they are disposed: nothing to give back. */
  released(): void {}

  async loaded(): Promise<void> {
    this.loadPeak = Math.max(this.loadPeak, tf.memory().numBytes);
    this.peak = tf.memory().numBytes;
  }

  stepDone(): void {
    this.peak = Math.max(this.peak, tf.memory().numBytes);
  }

  report(): WorkerMemory {
    return {
      idleRssBytes: this.idleBytes,
      loadPeakRssBytes: this.loadPeak,
      peakRssBytes: this.peak,
      tensorBytes: tf.memory().numBytes,
      peakFrom: "tensors",
    };
  }
}
