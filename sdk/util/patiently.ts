/**
 * Tries `attempt` until it succeeds or `timeoutMs` passes, pausing 0.2 s, then twice as long each
 * time up to 2 s. Processes that a scheduler starts together (srun tasks, a Job's pods) find each
 * other this way, as torchrun's agents retry their rendezvous. `waiting` is told once, at the
 * first failure, so a wrong address shows early; an error `retryable` refuses, or the last one
 * when time runs out (through `gaveUp`), is thrown.
 */
export async function patiently<T>(
  timeoutMs: number,
  attempt: (leftMs: number) => Promise<T>,
  o: {
    retryable?: (err: unknown) => boolean;
    waiting: (err: unknown, leftMs: number) => void;
    gaveUp: (err: unknown) => Error;
  },
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let pause = 200;
  let told = false;
  for (;;) {
    try {
      return await attempt(deadline - Date.now());
    } catch (err) {
      if (o.retryable && !o.retryable(err)) throw err;
      const left = deadline - Date.now();
      if (left <= pause) throw o.gaveUp(err);
      if (!told) o.waiting(err, left);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 2000);
    }
  }
}
