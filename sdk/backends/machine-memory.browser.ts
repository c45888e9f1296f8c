/** machine-memory.ts for a browser tab: what the browser says (navigator.deviceMemory, rounded by the browser), or no limit where it does not say. */
export function machineMemoryBytes(): number {
  const gib = (navigator as { deviceMemory?: number }).deviceMemory;
  return typeof gib === "number" ? gib * 2 ** 30 : Infinity;
}
