import { readFileSync, writeFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import * as tf from "@tensorflow/tfjs";
import { NATIVE_BACKEND, type NativeBackend } from "../backends/native/backend";
import type { WorkerMemory } from "../protocol/worker-memory";

/** A /proc/self/status field in bytes (it gives kB), or null where there is no such file. */
function statusBytes(field: "VmHWM" | "VmRSS"): number | null {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync("/proc/self/status", "utf8"));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
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

  /**
   * No model is loaded (the worker joined, or a fit was released): what the process holds
   * without one, once what earlier fits freed has gone back to the system (the native
   * backend's recycled arrays dropped, and a garbage collection). The next fit's is above it.
   */
  idle(): void {
    this.idleRss = settledRss();
  }

  /** A model is loading: its load's peak starts from here (what profiling it freed given back first). */
  start(): void {
    this.stepped = false;
    this.loadPeak = this.restart();
  }

  /**
   * The model is loaded: the fit's peak starts from here, once what building it freed has gone
   * back (the layers' initial weights, replaced by the ones sent). The load's own peak is kept.
   */
  loaded(): void {
    this.sample();
    this.loadPeak = this.peak;
    this.restart();
  }

  /** The resident set settled, and the peak reset to it. */
  private restart(): number {
    this.peak = settledRss();
    try {
      writeFileSync("/proc/self/clear_refs", "5");
      this.kernelPeak = statusBytes("VmHWM") !== null;
    } catch {
      this.kernelPeak = false;
    }
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
  }

  /** The peak through the last step; a member that ran no steps (a parameter server) the peak until now. */
  report(): WorkerMemory {
    if (!this.stepped) this.sample();
    return { idleRssBytes: this.idleRss, loadPeakRssBytes: this.loadPeak, peakRssBytes: this.peak, tensorBytes: tf.memory().numBytes, peakFrom: this.kernelPeak ? "kernel" : "sampled" };
  }
}

/** The resident set once freed memory has gone back: recycled arrays dropped, and a full garbage collection (without --expose-gc at start). */
function settledRss(): number {
  if (tf.getBackend() === NATIVE_BACKEND) (tf.backend() as NativeBackend).pool.drain();
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
  return process.memoryUsage.rss();
}
