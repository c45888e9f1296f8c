import type { RingSpeed } from "../plan/predict";
import { ringCpuOf } from "../plan/ring-cpu";
import { median } from "../util/median";
import type { WorkerHandle } from "../members/worker-handle";
import type { DataPlanePath } from "../protocol/data-plane";

/** Elements all-reduced to time the ring: a small one for the fixed cost, a large one (16 MiB) for the bandwidth. */
const SIZES = [1024, 4 * 1024 * 1024] as const;
const REPEATS = 7;

/**
 * The data ring's all-reduce, timed on the ring itself. The driver's links to the workers, which
 * plans priced it by before, run over WebSockets and JavaScript: on one machine the native data
 * plane's ring moved 43 MiB 5x faster than they said (README, the 11.4M MLP). Every member
 * all-reduces zeros of two sizes; each size's time is the best of its repeats (the ring's own
 * speed, as the join's link probes take it: a median of 5 at 8 MiB priced the same ring 1.0 and
 * 1.5 GB/s a hop in two launches, and training's all-reduces ran at the higher) on the slowest
 * member, and the two times give the ring formula's two terms. Each member also says what its
 * all-reduces cost its process's CPU, which plans hold against its core (plan/ring-cpu.ts).
 */
export async function probeRing(members: readonly WorkerHandle[], path: DataPlanePath, timeoutMs: number): Promise<RingSpeed> {
  const replies = await Promise.all(
    members.map((h) => h.channel.request({ type: "ringProbe", elements: [...SIZES], repeats: REPEATS }, "ringProbed", { timeoutMs, waitingFor: "the data ring's timed all-reduces" })),
  );
  const ms = SIZES.map((_, i) => Math.max(...replies.map((r) => Math.min(...(r.msg.ms[i] ?? [])))));
  const cpu = replies.map((r) => r.msg.cpuMs?.map(typicalCpuMs));
  const each = cpu.every((c) => c?.length === SIZES.length && c.every((x) => x !== undefined)) ? cpu.map((c) => [c![0]!, c![1]!] as const) : undefined;
  return ringSpeedOf(members.length, path, [SIZES[0] * 4, SIZES[1] * 4], [ms[0]!, ms[1]!], each);
}

/**
 * What one of a size's all-reduces costs a member's CPU: the median of all but the first, which
 * warms the path (code compiled, first buffers made). A median keeps the collections of the
 * buffers they made, which most of them include, and leaves out an all-reduce that another
 * process's work on the machine stretched.
 */
export function typicalCpuMs(repeats: readonly number[]): number | undefined {
  return repeats.length === 0 ? undefined : median(repeats.length > 1 ? repeats.slice(1) : repeats);
}

/**
 * The ring formula's terms from two timed all-reduces: t(B) = 2(N-1)/N x B / bandwidth + 2(N-1)
 * x latency. The extra bytes over the extra time give the bandwidth; what is left of the small
 * one's time, the latency (never below zero: noise must not make bytes free or time negative).
 * Each member's CPU times for the two (`cpuMs`, by rank), where all said, give its CPU terms alike.
 */
export function ringSpeedOf(members: number, path: DataPlanePath, bytes: readonly [number, number], ms: readonly [number, number], cpuMs?: ReadonlyArray<readonly [number, number]>): RingSpeed {
  const phases = 2 * (members - 1);
  const perByteMs = Math.max((ms[1] - ms[0]) / (bytes[1] - bytes[0]), ms[1] / bytes[1] / 4);
  const linkBytesPerSecond = (phases / members / perByteMs) * 1000;
  const latencySeconds = Math.max(0, ms[0] - perByteMs * bytes[0]) / phases / 1000;
  const cpu = cpuMs?.length === members ? { cpu: Object.freeze(cpuMs.map((c) => Object.freeze(ringCpuOf(bytes, c)))) } : {};
  return Object.freeze({ members, path, linkBytesPerSecond, latencySeconds, ...cpu });
}

/**
 * The data ring's speed as timed on the wiring it was timed on. Strategy "data" (not elastic,
 * whose rings change with their members) on several workers is measured before its plans, so
 * that they price the all-reduce by the data plane that will carry it.
 */
export class MeasuredRings {
  private kept: { key: string; speed: RingSpeed } | null = null;

  /** The speed timed on wiring `key`, if that is the wiring now. */
  find(key: string | null): RingSpeed | undefined {
    return this.kept && this.kept.key === key ? this.kept.speed : undefined;
  }

  /**
   * Wires the ring (`wire` says its key and how to time it) and times it unless this wiring was
   * timed; nothing where the cluster's strategy does not price its plans by the ring (`probes`).
   */
  async measure(probes: boolean, wire: () => Promise<{ key: string; time: () => Promise<RingSpeed> }>): Promise<RingSpeed | undefined> {
    if (!probes) return undefined;
    const { key, time } = await wire();
    if (this.kept?.key !== key) this.kept = { key, speed: await time() };
    return this.kept.speed;
  }
}
