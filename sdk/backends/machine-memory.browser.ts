/** machine-memory.ts for a browser tab: what the browser says (Chromium rounds it, 8 GiB at most), or no limit where it does not say. */
export function machineMemoryBytes(): number {
  const gib = (navigator as { deviceMemory?: number }).deviceMemory;
  return typeof gib === "number" ? gib * 2 ** 30 : Infinity;
}
