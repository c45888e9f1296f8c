import type { ClusterSpec } from "../config/cluster-spec";
import { measuredDriver } from "../members/driver-seat";
import type { WorkerHandle } from "../members/worker-handle";
import type { HandlingCost } from "../plan/core-load";
import { wallClock } from "../util/clock";
import { processCpuMs } from "../util/cpu-time";

/**
 * The driver's link to a worker, measured once: the planner predicts with it. A tiny probe's
 * round trip is the per-message latency (through both processes' threads); a 2 MiB one, less
 * that latency, gives the bandwidth. A 2 MiB probe goes first, untimed: the first large message
 * is slow for reasons of its own (buffers grown, code compiled), and it spends a shaped link's
 * burst (a token bucket, as tc's tbf and cloud NICs shape), which 1 MiB probes sent first had
 * let through at full speed: they read a 1 Gbit/s link as 170-206 MB/s.
 */
export async function probeLink(spec: ClusterSpec, h: WorkerHandle): Promise<void> {
  const tensor = (n: number) => ({ data: new Float32Array(n), shape: [n] });
  const roundTrip = async (t: { data: Float32Array; shape: number[] }): Promise<Trip> => {
    const sent = wallClock(),
      cpu = processCpuMs();
    const reply = await h.channel.request({ type: "probe" }, "probed", {
      timeoutMs: spec.timeouts.connectMs,
      waitingFor: "a link probe",
      attachments: [t],
    });
    const back = wallClock(),
      ownCpuMs = cpu === undefined ? undefined : processCpuMs()! - cpu;
    return { ms: back - sent, offset: reply.msg.clock - (sent + back) / 2, cpuMs: reply.msg.cpuMs, ownCpuMs };
  };
  const smalls: Trip[] = [];
  for (let i = 0; i < 8; i++) smalls.push(await roundTrip(tensor(1)));
  const big = tensor(PROBE_ELEMENTS);
  await roundTrip(big);
  // Best of two, like the workers' calibration: the link's own speed, not a busy moment's.
  const bigs = [await roundTrip(big), await roundTrip(big)];
  const bigMs = Math.min(...bigs.map((x) => x.ms));
  // The clock offset from the shortest exchange is off by at most half its round trip (NTP's
  // rule); the join's own estimate can be off by the backend's whole start-up.
  h.clockOffsetMs = smalls.reduce((b, x) => (x.ms < b.ms ? x : b)).offset;
  const rtt = Math.min(...smalls.map((x) => x.ms));
  h.linkLatencyMs = rtt / 2;
  h.linkBytesPerSecond = big.data.byteLength / Math.max(1e-4, (bigMs - rtt) / 1000);
  // The first small probe's CPU time counts everything since the worker started.
  const worker = (trips: readonly Trip[]) => trips.map((x) => x.cpuMs),
    driver = (trips: readonly Trip[]) => trips.map((x) => x.ownCpuMs);
  h.handling = handlingCost(worker(smalls.slice(1)), worker(bigs), big.data.byteLength);
  measuredDriver(handlingCost(driver(smalls), driver(bigs), big.data.byteLength));
  if (h.role !== "ps") return;
  // A parameter server's link moves whole shards at the rate the link sustains, which 2 MiB
  // riding a shaped link's burst overstate; the extra time of 8 MiB over 2 MiB, each after the
  // same pause, leaves the burst out.
  const shard = tensor(SHARD_PROBE_ELEMENTS);
  const shards = [await roundTrip(shard), await roundTrip(shard)];
  h.linkBytesPerSecond = sustainedRate(
    h.linkBytesPerSecond,
    [big.data.byteLength, shard.data.byteLength],
    [bigMs, Math.min(...shards.map((x) => x.ms))],
  );
  h.handling = handlingCost(worker(smalls.slice(1)), worker(shards), shard.data.byteLength) ?? h.handling;
}

/** One probe's round trip, the worker's clock offset it implies, and what it cost the worker's CPU (where it said) and the driver's. */
interface Trip {
  ms: number;
  offset: number;
  cpuMs: number | undefined;
  ownCpuMs: number | undefined;
}

/**
 * What a message costs a process's CPU (a member's: taking it and answering; the driver's:
 * sending it and taking the answer): the cheapest small probe's time per message, and the
 * cheapest of the large ones, less that, per MB. Cheapest: CPU time is exact, but a probe's
 * interval can also hold a heartbeat or a collection.
 */
export function handlingCost(
  smalls: ReadonlyArray<number | undefined>,
  larges: ReadonlyArray<number | undefined>,
  bytes: number,
): HandlingCost | undefined {
  const said = (v: number | undefined): v is number => v !== undefined;
  if (smalls.length === 0 || larges.length === 0 || !smalls.every(said) || !larges.every(said)) return undefined;
  const messageMs = Math.min(...smalls);
  return { messageMs, msPerMB: Math.max(0, Math.min(...larges) - messageMs) / (bytes / 1e6) };
}

/**
 * The rate a link keeps up: the extra bytes of the larger of two messages over its extra time,
 * which leaves out what both got through at once (a token bucket's burst) and their fixed cost;
 * never above `single` (one message's estimate), and `single` where noise makes the larger faster.
 */
export function sustainedRate(single: number, bytes: readonly [number, number], ms: readonly [number, number]): number {
  if (!(ms[1] > ms[0])) return single;
  return Math.min(single, (bytes[1] - bytes[0]) / ((ms[1] - ms[0]) / 1000));
}

/** The link probe's large message: 2 MiB of float32 values. */
const PROBE_ELEMENTS = 512 * 1024;

/**
 * A parameter server's second probe: 8 MiB. Between namespace hosts at 1 Gbit/s (tc tbf with a
 * 625 KB bucket, as bench:network shaped links until 2026-11-27) 2 MiB alone read 136-154 MB/s;
 * a 45.6 MB pull of the 11.4M MLP ran at about 117.
 */
const SHARD_PROBE_ELEMENTS = 2 * 1024 * 1024;
