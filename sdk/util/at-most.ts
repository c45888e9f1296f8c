/**
 * Waits for `p`, or `ms` at most (then resolves undefined). The timer keeps the process alive
 * while it waits: a driver's sockets and its local workers' processes do not (a script that ends
 * must not hang on them), so a wait whose only clock was unref'd could find the event loop
 * empty and Node would leave the wait, and whoever awaits it, pending forever.
 */
export async function atMost<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
