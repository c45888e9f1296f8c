import { setFlagsFromString } from "node:v8";
import { Worker, type WorkerOptions } from "node:worker_threads";

/**
 * The old generation the communication thread's heap starts with, in MiB.
 *
 * That thread's own objects stay near 10 MiB, but every step passes megabytes of ArrayBuffers
 * through it (frames read off sockets, attachments handed over from the compute thread). Left
 * to V8's sizing for a 10 MiB heap, that traffic set off a full collection every two or three
 * steps (3-20 ms each, a pull or push waiting behind it). Measured on this machine: 2 workers
 * and a parameter server on the small MLP over loopback, 5.6-6.5k samples/s with V8's sizing,
 * 7.1-7.3k from 32 MiB, 7.8-8.4k from 48, 8.9-9.0k from 64 and 9.1-9.5k from 128; full
 * collections on a worker's communication thread over 100 steps fell from 36 to 3. The WebSocket
 * data plane on the same model: 19.5-20.5k -> 25.2-26.1k. Between namespace hosts at 10 Gbit/s
 * (bench:network, medians of 3): the server's rows on that model 5846 -> 8050 (sync) and
 * 6788 -> 9257 (async). The price is resident memory: a process's peak during those loopback
 * fits rose by 15-30 MiB at 64 (30-45 at 128), garbage buffers kept longer.
 */
export const COMM_OLD_SPACE_MIB = 64;

/**
 * Starts the communication thread with that heap. V8 reads the size when a thread's heap is
 * made, which happens on the new thread, so it is set until the thread runs and then handed
 * back to V8's own sizing for any thread started after it.
 */
export function startCommThread(file: string, options: WorkerOptions): Worker {
  setFlagsFromString(`--initial-old-space-size=${COMM_OLD_SPACE_MIB}`);
  let reset = false;
  const restore = (): void => {
    if (reset) return;
    reset = true;
    setFlagsFromString("--initial-old-space-size=0");
  };
  try {
    const comm = new Worker(file, options);
    comm.once("online", restore);
    comm.once("error", restore);
    comm.once("exit", restore);
    return comm;
  } catch (err) {
    restore();
    throw err;
  }
}
