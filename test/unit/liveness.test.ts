import assert from "node:assert/strict";
import { test } from "node:test";
import type { Link } from "../../sdk/transport/link";
import { Liveness } from "../../sdk/transport/liveness";

/** A link whose peer answers every ping on the next turn of the event loop, or never. */
function peer(alive: Liveness, answers: boolean): Link {
  return { ping: () => answers && setImmediate(() => alive.heard()) } as unknown as Link;
}

function blockFor(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // This process stands still, as under a long synchronous task.
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test("this process's own stall is not the peer's silence: a peer that answers is never reported", async () => {
  const alive = new Liveness();
  const reported: number[] = [];
  alive.start(peer(alive, true), 20, 100, (ms) => reported.push(ms));
  await sleep(60);
  blockFor(400);
  await sleep(200);
  alive.stop();
  assert.deepEqual(reported, [], "a 400 ms stall of our own under a 100 ms timeout");
});

// A verdict that never came would leave the test waiting: its timeout fails it.
test("a mute peer is still reported while this process stalls again and again", { timeout: 60_000 }, async () => {
  const alive = new Liveness();
  const keepAlive = setTimeout(() => undefined, 10_000);
  const stalls = setInterval(() => blockFor(70), 10);
  const silent = await new Promise<number>((resolve) => alive.start(peer(alive, false), 20, 100, resolve));
  clearInterval(stalls);
  clearTimeout(keepAlive);
  // Each 70 ms stall on a 20 ms interval holds back only what exceeds two intervals.
  assert.ok(silent > 100, `reported after ${silent} ms`);
});

test("a mute peer on a quiet process is reported after the timeout", { timeout: 60_000 }, async () => {
  const alive = new Liveness();
  const keepAlive = setTimeout(() => undefined, 5000);
  const silent = await new Promise<number>((resolve) => alive.start(peer(alive, false), 10, 60, resolve));
  clearTimeout(keepAlive);
  assert.ok(silent > 60, String(silent));
});

test("peerSilenceMs leaves out this process's own stall, one under way included; a mute peer's silence stays", { timeout: 60_000 }, async () => {
  // A 200 ms interval: a busy machine's late timers (tens of ms) are not stalls of two intervals.
  const alive = new Liveness();
  alive.start(peer(alive, false), 200, 60_000, () => undefined);
  alive.heard();
  await sleep(100);
  const quiet = alive.peerSilenceMs();
  blockFor(1000);
  // Checked before the next tick could notice the stall: at least 1000 - 2 x 200 ms of it is ours.
  const afterStall = alive.peerSilenceMs();
  const raw = alive.silentForMs();
  alive.stop();
  assert.ok(quiet >= 90, `a mute peer on a quiet process: ${quiet} ms`);
  assert.ok(raw >= 1090, `raw silence ${raw} ms`);
  assert.ok(afterStall <= raw - 550, `after a 1000 ms stall of our own: ${afterStall} ms of ${raw}`);
});

test("a limit given as a function holds as it is at each tick (a worker waits longer between fits); onSilent is told which", { timeout: 60_000 }, async () => {
  const alive = new Liveness();
  const keepAlive = setTimeout(() => undefined, 10_000);
  let fitting = false;
  const reported: Array<[number, number]> = [];
  const done = new Promise<void>((resolve) =>
    alive.start(peer(alive, false), 10, () => (fitting ? 60 : 60_000), (ms, limitMs) => {
      reported.push([ms, limitMs]);
      resolve();
    }),
  );
  await sleep(300);
  assert.deepEqual(reported, [], "300 ms of a mute peer under the 60 s limit");
  fitting = true;
  await done;
  clearTimeout(keepAlive);
  alive.stop();
  assert.equal(reported.length, 1);
  assert.equal(reported[0]![1], 60);
  assert.ok(reported[0]![0] >= 300, `reported after ${reported[0]![0]} ms of silence`);
});
