import assert from "node:assert/strict";
import { test } from "node:test";
import { ringSpeedOf } from "../../sdk/driver/ring-probe";
import { predictData, stepRoundSeconds } from "../../sdk/plan/predict";
import { speedsOf } from "../../sdk/plan/speeds";
import { sustainedRate } from "../../sdk/cluster/link-probe";

/** The ring formula's time for `bytes` over N members at a hop's bandwidth and a phase's latency. */
function ringMs(n: number, bytes: number, bytesPerSecond: number, latencyMs: number): number {
  return ((2 * (n - 1)) / n) * (bytes / bytesPerSecond) * 1000 + 2 * (n - 1) * latencyMs;
}

test("the ring's terms come back from two all-reduces timed by the ring formula", () => {
  for (const n of [2, 3, 4, 8]) {
    const bytes = [4096, 8 * 2 ** 20] as const;
    const ms = [ringMs(n, bytes[0], 1.2e9, 0.15), ringMs(n, bytes[1], 1.2e9, 0.15)] as const;
    const r = ringSpeedOf(n, "native", bytes, ms);
    assert.ok(Math.abs(r.linkBytesPerSecond / 1.2e9 - 1) < 1e-9, `${n} members: ${r.linkBytesPerSecond} B/s`);
    assert.ok(Math.abs(r.latencySeconds * 1000 - 0.15) < 1e-9, `${n} members: ${r.latencySeconds * 1000} ms`);
    assert.equal(r.members, n);
  }
});

test("noise never makes the ring's bytes free or its latency negative", () => {
  // The large all-reduce timed no slower than the small one: bandwidth from the large one's own time.
  const flat = ringSpeedOf(2, "websocket", [4096, 8 * 2 ** 20], [5, 4]);
  assert.ok(Number.isFinite(flat.linkBytesPerSecond) && flat.linkBytesPerSecond > 0);
  assert.ok(flat.latencySeconds >= 0);
  // A small all-reduce faster than the bandwidth alone allows: latency 0, not below.
  assert.equal(ringSpeedOf(2, "native", [4096, 8 * 2 ** 20], [0.0001, 10]).latencySeconds, 0);
});

test("a data plan prices its all-reduce by the measured ring where there is one for as many members, else by the links", () => {
  const devices = [0, 1].map(() => ({ gflops: 20, kernelOverheadUs: 8, linkBytesPerSecond: 300e6, linkLatencyMs: 0.5, host: "a", cpus: 2 }));
  const ring = ringSpeedOf(2, "native", [4096, 8 * 2 ** 20], [ringMs(2, 4096, 1.2e9, 0.1), ringMs(2, 8 * 2 ** 20, 1.2e9, 0.1)]);
  const o = { flopsPerSample: 1e6, layers: 3, gradientBytes: 45e6, globalBatch: 128, replicas: 2, feedBytes: 0 };
  const byLinks = predictData(o, speedsOf(devices)!);
  const byRing = predictData(o, speedsOf(devices, ring)!);
  assert.ok(Math.abs(byLinks.commMs - ringMs(2, 45e6, 300e6, 0.5)) < 1e-9, `links: ${byLinks.commMs} ms`);
  assert.ok(Math.abs(byRing.commMs - ringMs(2, 45e6, 1.2e9, 0.1)) < 1e-9, `ring: ${byRing.commMs} ms`);
  assert.match(byRing.basis, /priced by the data ring itself \(native, measured on its 2 members: 1200 MB\/s a hop, 0\.10 ms a phase\)/);
  assert.match(byLinks.basis, /priced at those links' speed \(the data ring was not measured\)/);
  // Measured on 3 members, it does not price a ring of 2.
  const three = ringSpeedOf(3, "native", [4096, 8 * 2 ** 20], [1, 20]);
  assert.ok(Math.abs(predictData(o, speedsOf(devices, three)!).commMs - byLinks.commMs) < 1e-9);
});

test("a step pays what a round driven as a step took beyond the ring's price for its all-reduce, on several replicas only", () => {
  const devices = [0, 1].map(() => ({ gflops: 20, kernelOverheadUs: 8, linkBytesPerSecond: 300e6, linkLatencyMs: 0.5, host: "a", cpus: 2 }));
  const ms = [ringMs(2, 4096, 1.2e9, 0.1), ringMs(2, 8 * 2 ** 20, 1.2e9, 0.1)] as const;
  const plain = ringSpeedOf(2, "native", [4096, 8 * 2 ** 20], ms);
  // A round of 1 MiB took 1.5 ms more than the ring's terms price an all-reduce of 1 MiB.
  const rounds = ringSpeedOf(2, "native", [4096, 8 * 2 ** 20], ms, { round: { bytes: 2 ** 20, ms: ringMs(2, 2 ** 20, 1.2e9, 0.1) + 1.5 } });
  assert.equal(plain.roundSeconds, undefined);
  assert.ok(Math.abs(rounds.roundSeconds! * 1000 - 1.5) < 1e-9, `${rounds.roundSeconds! * 1000} ms`);
  // A round faster than the all-reduce alone is noise: nothing, not a negative cost.
  assert.equal(ringSpeedOf(2, "native", [4096, 8 * 2 ** 20], ms, { round: { bytes: 2 ** 20, ms: ms[0] } }).roundSeconds, 0);
  const o = { flopsPerSample: 1e6, layers: 3, gradientBytes: 1e6, globalBatch: 128, replicas: 2, feedBytes: 0 };
  const before = predictData(o, speedsOf(devices, plain)!);
  const after = predictData(o, speedsOf(devices, rounds)!);
  // The round replaces the two link latencies (0.5 ms each) a step's messages were priced at.
  assert.ok(Math.abs(after.stepMs - before.stepMs - (1.5 - 1)) < 1e-9, `${after.stepMs} against ${before.stepMs}`);
  assert.match(after.basis, /1\.50 ms a step for its messages, the workers starting apart and a cold all-reduce/);
  const one = { ...o, replicas: 1, globalBatch: 64 };
  assert.equal(predictData(one, speedsOf(devices, rounds)!).stepMs, predictData(one, speedsOf(devices, plain)!).stepMs);
});

test("a round whose all-reduce ran under the ring's price used a burst, which a step with fewer bytes pays back", () => {
  // 1 Gbit/s: 120 MB/s a hop. The round's 1 MiB all-reduce, as its last member timed it, ran 0.75 ms under its price.
  const ms = [ringMs(2, 4096, 120e6, 0.05), ringMs(2, 8 * 2 ** 20, 120e6, 0.05)] as const;
  const price = ringMs(2, 2 ** 20, 120e6, 0.05);
  const ring = ringSpeedOf(2, "native", [4096, 8 * 2 ** 20], ms, { round: { bytes: 2 ** 20, ms: price + 0.9, allReduceMs: price - 0.75 } });
  assert.ok(Math.abs(ring.roundSeconds! * 1000 - 0.9) < 1e-9, `${ring.roundSeconds! * 1000} ms`);
  assert.ok(Math.abs(ring.burstSeconds! * 1000 - 0.75) < 1e-9, `${ring.burstSeconds! * 1000} ms`);
  // 31 KB a step (PowerSGD's on the small MLP) spend 0.26 ms on this wire: 0.49 ms of the burst are beyond them.
  const small = 31_244;
  const wireMs = (small / 120e6) * 1000;
  assert.ok(Math.abs(stepRoundSeconds(ring, small)! * 1000 - (0.9 + 0.75 - wireMs)) < 1e-9);
  // A step with more bytes than the burst's time at the ring's rate uses all of it, as the round did.
  assert.equal(stepRoundSeconds(ring, 2 ** 20), ring.roundSeconds);
  const devices = [0, 1].map(() => ({ gflops: 20, kernelOverheadUs: 8, linkBytesPerSecond: 120e6, linkLatencyMs: 0.05, host: "a", cpus: 2 }));
  const o = { flopsPerSample: 1e6, layers: 3, gradientBytes: small, globalBatch: 128, replicas: 2, feedBytes: 0 };
  const withBurst = predictData(o, speedsOf(devices, ring)!);
  const without = predictData(o, speedsOf(devices, { ...ring, burstSeconds: 0 })!);
  assert.ok(Math.abs(withBurst.stepMs - without.stepMs - (0.75 - wireMs)) < 1e-9, `${withBurst.stepMs} against ${without.stepMs}`);
  assert.match(withBurst.basis, /0\.49 ms of it the burst the link let through after idle/);
  assert.doesNotMatch(without.basis, /burst/);
  // An all-reduce slower than its price in the round is a cold start the round's cost holds already: no burst.
  const cold = ringSpeedOf(2, "native", [4096, 8 * 2 ** 20], ms, { round: { bytes: 2 ** 20, ms: price + 1.5, allReduceMs: price + 0.4 } });
  assert.equal(cold.burstSeconds, 0);
  assert.equal(stepRoundSeconds(cold, small), cold.roundSeconds);
});

test("a parameter server's link is priced at the rate it sustains, its burst left out", () => {
  // 1 Gbit/s shaped by a token bucket of 625 KB: what leaves at once is free, the rest at 125 MB/s.
  const rate = 125e6;
  const burst = 625e3;
  const ms = (bytes: number): number => 0.5 + (Math.max(0, bytes - burst) / rate) * 1000;
  const small = 2 * 1024 * 1024;
  const large = 8 * 1024 * 1024;
  const single = small / ((ms(small) - 0.5) / 1000);
  assert.ok(single > 1.4 * rate, "2 MiB alone overstates the link");
  assert.ok(Math.abs(sustainedRate(single, [small, large], [ms(small), ms(large)]) / rate - 1) < 1e-9);
  assert.equal(sustainedRate(single, [small, large], [ms(small), ms(small) - 1]), single, "noise that makes 8 MiB faster keeps the one-message estimate");
  assert.equal(sustainedRate(100e6, [small, large], [ms(small), ms(large)]), 100e6, "never above the one-message estimate");
});
