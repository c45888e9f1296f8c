/** cpu-time.ts for a browser tab: a page cannot read its CPU time. */
export function processCpuMs(): number | undefined {
  return undefined;
}
