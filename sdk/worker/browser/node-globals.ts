/**
 * What the worker's shared modules expect of Node, as a browser tab has it: Buffer (the `buffer`
 * package, the implementation bundlers use), timers that can be unref'd (a tab has no process to
 * keep alive, so unref does nothing), and a `process` whose output goes to the console. esbuild
 * puts these in place of the globals of the same names in the browser bundles.
 */
import { Buffer } from "buffer";

export { Buffer };

interface BrowserTimer {
  readonly id: number;
  unref(): BrowserTimer;
  ref(): BrowserTimer;
  hasRef(): boolean;
  [Symbol.toPrimitive](): number;
}

function timer(id: number): BrowserTimer {
  const t: BrowserTimer = { id, unref: () => t, ref: () => t, hasRef: () => false, [Symbol.toPrimitive]: () => id };
  return t;
}

const idOf = (t: BrowserTimer | number | undefined): number | undefined =>
  typeof t === "object" && t !== null ? t.id : t;

function setTimeoutShim(fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]): BrowserTimer {
  return timer(globalThis.setTimeout(fn, ms, ...args) as unknown as number);
}
function setIntervalShim(fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]): BrowserTimer {
  return timer(globalThis.setInterval(fn, ms, ...args) as unknown as number);
}
function clearTimeoutShim(t: BrowserTimer | number | undefined): void {
  globalThis.clearTimeout(idOf(t));
}
function clearIntervalShim(t: BrowserTimer | number | undefined): void {
  globalThis.clearInterval(idOf(t));
}
function setImmediateShim(fn: (...args: unknown[]) => void, ...args: unknown[]): BrowserTimer {
  return timer(globalThis.setTimeout(fn, 0, ...args) as unknown as number);
}

export {
  setTimeoutShim as setTimeout,
  setIntervalShim as setInterval,
  clearTimeoutShim as clearTimeout,
  clearIntervalShim as clearInterval,
  setImmediateShim as setImmediate,
  clearTimeoutShim as clearImmediate,
};

const write = (log: (s: string) => void) => ({ write: (s: string): boolean => (log(s.replace(/\n$/, "")), true) });

export const process = {
  env: {} as Record<string, string | undefined>,
  pid: 0,
  version: "",
  versions: {} as Record<string, string>,
  platform: "browser",
  argv: [] as string[],
  stdout: write((s) => console.log(s)),
  stderr: write((s) => console.warn(s)),
  nextTick: (fn: (...args: unknown[]) => void, ...args: unknown[]): void => queueMicrotask(() => fn(...args)),
  hrtime: Object.assign(
    (prev?: [number, number]): [number, number] => {
      const ns = BigInt(Math.round(performance.now() * 1e6));
      const now: [number, number] = [Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n)];
      return prev ? [now[0] - prev[0], now[1] - prev[1]] : now;
    },
    { bigint: (): bigint => BigInt(Math.round(performance.now() * 1e6)) },
  ),
};
