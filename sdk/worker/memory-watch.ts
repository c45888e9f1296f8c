import { readFileSync, writeFileSync } from "node:fs";
import { getHeapSpaceStatistics } from "node:v8";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND, type NativeBackend } from "../backends/native/backend";
import type { WorkerMemory } from "../protocol/worker-memory";
import { collectGarbage, collectOnce } from "./collect-garbage";

/** A /proc/self/status field in bytes (it gives kB), or null where there is no such file. */
export function statusBytes(field: "VmHWM" | "VmRSS"): number | null {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync("/proc/self/status", "utf8"));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Resets the kernel's high-water mark of the resident set to what is resident now; false where it cannot (not Linux). */
export function resetKernelPeak(): boolean {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
    return statusBytes("VmHWM") !== null;
  } catch {
    return false;
  }
}

/** The bytes of V8's young generation (its new space) resident now. */
function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === "new_space")?.physical_space_size ?? 0;
}

/**
 * A worker's memory during one fit: its resident set without a model, the most it held
 * while the model loaded and while it trained, and the tensors TF.js counts once the fit is
 * over (the training state kept between steps). On Linux the kernel's own high-water mark is
 * reset when a model starts loading and again once it has loaded (writing 5 to
 * /proc/self/clear_refs), so each peak is every page the process touched, mid-step included
 * (read after each step: the weights fetched at the fit's end are not training's); elsewhere
 * the resident set is sampled after each step and the peak says so.
 */
export class MemoryWatch {
  private idleRss = 0;
  private loadPeak = 0;
  private peak = 0;
  private stepped = false;
  private kernelPeak = false;
  /** V8's young generation: resident when the idle process was read, and the most resident after a step of this fit. */
  private youngIdle = 0;
  private youngFit = 0;

  /** `collectCommGarbage`: has the communication thread collect its garbage, resolving when it has. */
  constructor(private readonly collectCommGarbage: () => Promise<void>) {}

  /**
   * A model is loading, its weights (`arrivedBytes`) come with the message: the process
   * without a model is read here (settledRss, less those weights), after whatever ran
   * since the last fit (a profile, the last fit's release) has settled, and the load's peak
   * starts from here. Read at the release instead, it still held 20-30 MiB that was gone
   * by the next load, on some workers and not others.
   */
  async start(arrivedBytes: number): Promise<void> {
    this.stepped = false;
    this.youngFit = 0;
    this.loadPeak = await this.restart();
    this.idleRss = Math.max(0, this.loadPeak - arrivedBytes);
    this.youngIdle = youngGenerationBytes();
  }

  /**
   * A fit was released: what it freed goes back to the system now (the recycled arrays, one
   * collection), not when the next model loads. Nothing is read here, so one collection does:
   * a whole settling at every release cost the test suite some 50 s.
   */
  released(): void {
    if (tf.getBackend() === NATIVE_BACKEND) (tf.backend() as NativeBackend).pool.drain();
    collectOnce();
  }

  /**
   * The model is loaded: the fit's peak starts from here, once what building it freed has gone
   * back (the layers' initial weights, replaced by the ones sent). The load's own peak is kept.
   * A ZeRO-3 replica loaded in parts is loaded once its shard's values have come ("setShard").
   */
  async loaded(): Promise<void> {
    this.sample();
    // Called again when a ZeRO-3 replica's shard arrives after its load: the larger peak is the load's.
    this.loadPeak = Math.max(this.loadPeak, this.peak);
    await this.restart();
  }

  /** The resident set settled, and the peak reset to it. */
  private async restart(): Promise<number> {
    this.peak = await settledRss(this.collectCommGarbage);
    this.kernelPeak = resetKernelPeak();
    return this.peak;
  }

  /** The peak so far. */
  private sample(): void {
    const now = this.kernelPeak ? statusBytes("VmHWM") : null;
    this.peak = Math.max(this.peak, now ?? process.memoryUsage.rss());
  }

  /** After a step: the peak so far (a fit's last step's is its training peak; what follows is fetching the weights). */
  stepDone(): void {
    this.stepped = true;
    this.sample();
    this.youngFit = Math.max(this.youngFit, youngGenerationBytes());
  }

  /** The peak through the last step; a member that ran no steps (a parameter server) the peak until now. */
  report(): WorkerMemory {
    if (!this.stepped) this.sample();
    return {
      idleRssBytes: this.idleRss,
      youngIdleBytes: this.youngIdle,
      youngFitBytes: this.stepped ? this.youngFit : this.youngIdle,
      loadPeakRssBytes: this.loadPeak,
      peakRssBytes: this.peak,
      tensorBytes: tf.memory().numBytes,
      peakFrom: this.kernelPeak ? "kernel" : "sampled",
    };
  }
}

/**
 * The resident set once freed memory has gone back: recycled arrays dropped, both threads'
 * garbage collected (the communication thread holds what it sent and received until its own
 * collection: a fit's weights fetched at its end, 42 MiB for an 11M model, were still counted
 * as the idle process's), and malloc's free memory given back to the system (1-2 MiB in each
 * of many arenas: 20 MiB a worker).
 */
async function settledRss(collectCommGarbage: () => Promise<void>): Promise<number> {
  const native = tf.getBackend() === NATIVE_BACKEND ? (tf.backend() as NativeBackend) : null;
  native?.pool.drain();
  // Each thread collects its own, at once.
  await Promise.all([collectCommGarbage(), collectGarbage()]);
  native?.addon.trimMemory();
  return process.memoryUsage.rss();
}
