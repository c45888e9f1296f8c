import { allReduceMs, type RingSpeed } from "../plan/predict";
import { ringCpuOf } from "../plan/ring-cpu";
import { median } from "../util/median";
import type { WorkerHandle } from "../members/worker-handle";
import type { DataPlanePath } from "../protocol/data-plane";

/** Elements all-reduced to time the ring: a small one for the fixed cost, a large one (16 MiB) for the bandwidth. */
const SIZES = [1024, 4 * 1024 * 1024] as const;
const REPEATS = 7;
/** Rounds of a step-shaped all-reduce (stepRoundMs), the first (which warms the path) left out, of a small model's gradient (1 MiB). */
const ROUNDS = 16;
const ROUND_ELEMENTS = 256 * 1024;

/**
 * The data ring's all-reduce, timed on the ring itself. The driver's links to the workers, which
 * plans priced it by before, run over WebSockets and JavaScript: on one machine the native data
 * plane's ring moved 43 MiB 5x faster than they said (README, the 11.4M MLP). Every member
 * all-reduces zeros of two sizes; each size's time is the best of its repeats (the ring's own
 * speed, as the join's link probes take it: a median of 5 at 8 MiB priced the same ring 1.0 and
 * 1.5 GB/s a hop in two launches, and training's all-reduces ran at the higher) on the slowest
 * member, and the two times give the ring formula's two terms. Each member also says what its
 * all-reduces cost its process's CPU, which plans hold against its core (plan/ring-cpu.ts).
 * Then the driver drives rounds of a 1 MiB all-reduce as it drives steps (stepRoundMs).
 */
export async function probeRing(
  members: readonly WorkerHandle[],
  path: DataPlanePath,
  timeoutMs: number,
): Promise<RingSpeed> {
  const replies = await Promise.all(
    members.map((h) =>
      h.channel.request({ type: "ringProbe", elements: [...SIZES], repeats: REPEATS }, "ringProbed", {
        timeoutMs,
        waitingFor: "the data ring's timed all-reduces",
      }),
    ),
  );
  const ms = SIZES.map((_, i) => Math.max(...replies.map((r) => Math.min(...(r.msg.ms[i] ?? [])))));
  const cpu = replies.map((r) => r.msg.cpuMs?.map(typicalCpuMs));
  const each = cpu.every((c) => c?.length === SIZES.length && c.every((x) => x !== undefined))
    ? cpu.map((c) => [c![0]!, c![1]!] as const)
    : undefined;
  const round = await stepRoundMs(members, timeoutMs);
  return ringSpeedOf(members.length, path, [SIZES[0] * 4, SIZES[1] * 4], [ms[0]!, ms[1]!], {
    ...(each ? { cpuMs: each } : {}),
    round: { bytes: ROUND_ELEMENTS * 4, ...round },
  });
}

/**
 * A round driven as a step is: the driver asks every member, one message after another, for one
 * all-reduce of a small model's gradient, and waits for all their answers; the median round
 * after the first. Back to back, the probe's all-reduces leave out what a step pays around its
 * all-reduce: the step's messages there and back, the members starting apart (the first waits in
 * the all-reduce for the last) and an all-reduce that starts cold. Over loopback with 2 workers,
 * the small MLP's steps spent 0.45-0.5 ms between steps, 0.5-0.7 ms waiting for the other worker
 * (whose compute took only 0.2-0.3 ms longer) and 1.0-1.1 ms in its 1 MB all-reduce, which the
 * ring's terms priced at 0.6-0.7: the plan, pricing 2 link latencies for the rest, put the step
 * at 2.9-3.1 ms where it took 3.8-3.9 (scratch measurement over run.history, issue 38's notes).
 * A third size timed back to back (1 MiB) priced those steps faster still (bench:network, the
 * small MLP at 10 Gbit/s predicted 1.43x the samples/s it measured): what a step pays is the
 * all-reduce's cold start, so the round times one. 8 rounds' median ranged 1.2-2.0 ms over four
 * launches on the same links; 16 take about 1.3 s at 100 Mbit/s with 2 workers (by its rate).
 * Each round also keeps its all-reduce's own time as the member that entered last timed it: on
 * links that let a burst through after idle, it runs under the ring's price (ringSpeedOf).
 */
async function stepRoundMs(
  members: readonly WorkerHandle[],
  timeoutMs: number,
): Promise<{ ms: number; allReduceMs: number }> {
  const rounds: Array<{ ms: number; allReduceMs: number }> = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    const replies = await Promise.all(
      members.map((h) =>
        h.channel.request({ type: "ringProbe", elements: [ROUND_ELEMENTS], repeats: 1, keep: true }, "ringProbed", {
          timeoutMs,
          waitingFor: "a round of the data ring's all-reduce driven as a step",
        }),
      ),
    );
    // The member that entered last waited least: its time is the all-reduce's own.
    rounds.push({
      ms: performance.now() - t0,
      allReduceMs: Math.min(...replies.map((r) => r.msg.ms[0]?.[0] ?? Infinity)),
    });
  }
  const kept = rounds.slice(1);
  return { ms: median(kept.map((r) => r.ms)), allReduceMs: median(kept.map((r) => r.allReduceMs)) };
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
 * A step-shaped round of an all-reduce (`round`) less what these terms price it at is what a step
 * costs around its all-reduce (never below zero). Where the round's all-reduce itself, as its last
 * member to enter timed it, ran faster than they price it, the link let a burst through after
 * idle (`burstSeconds`): the round's cost came out that much lower than a step too small to use
 * the burst pays.
 */
export function ringSpeedOf(
  members: number,
  path: DataPlanePath,
  bytes: readonly [number, number],
  ms: readonly [number, number],
  also: {
    cpuMs?: ReadonlyArray<readonly [number, number]>;
    round?: { bytes: number; ms: number; allReduceMs?: number };
  } = {},
): RingSpeed {
  const { cpuMs, round } = also;
  const phases = 2 * (members - 1);
  const perByteMs = Math.max((ms[1] - ms[0]) / (bytes[1] - bytes[0]), ms[1] / bytes[1] / 4);
  const linkBytesPerSecond = (phases / members / perByteMs) * 1000;
  const latencySeconds = Math.max(0, ms[0] - perByteMs * bytes[0]) / phases / 1000;
  const cpu =
    cpuMs?.length === members ? { cpu: Object.freeze(cpuMs.map((c) => Object.freeze(ringCpuOf(bytes, c)))) } : {};
  const price = round ? allReduceMs(round.bytes, members, { linkBytesPerSecond, latencySeconds }) : 0;
  const burst =
    round?.allReduceMs !== undefined && Number.isFinite(round.allReduceMs)
      ? { burstSeconds: Math.max(0, price - round.allReduceMs) / 1000 }
      : {};
  const priced = round ? { roundSeconds: Math.max(0, round.ms - price) / 1000, ...burst } : {};
  return Object.freeze({ members, path, linkBytesPerSecond, latencySeconds, ...cpu, ...priced });
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
  async measure(
    probes: boolean,
    wire: () => Promise<{ key: string; time: () => Promise<RingSpeed> }>,
  ): Promise<RingSpeed | undefined> {
    if (!probes) return undefined;
    const { key, time } = await wire();
    if (this.kept?.key !== key) this.kept = { key, speed: await time() };
    return this.kept.speed;
  }
}
