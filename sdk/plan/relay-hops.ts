import type { RingSpeed } from "./predict";

/**
 * Which of a ring's links pass through the driver's relay: a browser tab accepts no
 * connections, so the link from a rank to its predecessor, when that predecessor is a tab, is
 * joined by the driver (two WebSocket hops and a pass through the driver's process); links to
 * Node workers are direct, a tab dialling them as any worker does. The ring probe times each
 * link as it runs, so the plan's prediction already carries what the relay costs.
 */
export function relayNote(
  ring: readonly number[],
  devices: ReadonlyArray<{ tab?: boolean }> | undefined,
  measured?: RingSpeed,
): string | null {
  if (!devices || ring.length < 2 || !devices.some((d) => d.tab)) return null;
  const n = ring.length;
  const relayed = ring.flatMap((r, i) => {
    const prev = ring[(i - 1 + n) % n]!;
    return devices[prev]?.tab ? [`${prev}-${r}`] : [];
  });
  const direct = n - relayed.length;
  const timed = measured
    ? `the ring as it runs, relay included, measured ${(measured.linkBytesPerSecond / 1e6).toFixed(0)} MB/s a hop and ${(measured.latencySeconds * 1000).toFixed(2)} ms a phase`
    : "the ring probe times them as they run before a fit";
  return `ring links to browser tabs pass through the driver's relay (a tab accepts no connections): ${relayed.join(", ")}; ${direct} link(s) direct; ${timed}`;
}
