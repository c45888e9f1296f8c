import assert from "node:assert/strict";
import { test } from "node:test";
import { fasterPlane, timeRingPlanes } from "../../sdk/driver/ring-planes";
import type { RingSpeed } from "../../sdk/plan/predict";
import type { DataPlaneChoice } from "../../sdk/protocol/data-plane";

/** A 2-member ring moving `gbs` GB/s a hop, with `roundMs` around each step's all-reduce. */
const ring = (path: RingSpeed["path"], gbs: number, roundMs = 0.3): RingSpeed => ({
  members: 2,
  path,
  linkBytesPerSecond: gbs * 1e9,
  latencySeconds: 20e-6,
  roundSeconds: roundMs / 1000,
});

test("the native plane is kept when it is faster, and the reason gives both planes' times", () => {
  const { choice, ring: r } = fasterPlane(ring("native", 2.2), ring("websocket", 0.9));
  assert.equal(choice.path, "native");
  assert.equal(r.path, "native");
  assert.match(choice.why, /1 MiB 0\.82 ms native, 1\.51 ms over WebSockets; 16 MiB 7\.97 ms native, 18\.98 ms over WebSockets/);
  assert.equal(r.chosen, choice.why);
});

test("the WebSocket links carry the all-reduce only when they are 1.2x faster at every size", () => {
  // The AVX-512 VM before the native plane kept its receive buffer: 0.24 against 1.12 GB/s at 1 MiB.
  const slowNative = ring("native", 0.24), sockets = ring("websocket", 1.12);
  assert.equal(fasterPlane(slowNative, sockets).choice.path, "websocket");
  assert.match(fasterPlane(slowNative, sockets).choice.why, /WebSocket links 1\.2x faster or more at every size/);
  assert.equal(fasterPlane(ring("native", 1.0), ring("websocket", 1.1)).choice.path, "native", "within the margin: noise");
  // Faster per byte but slower around each step: a 1 MiB step costs more over WebSockets.
  assert.equal(fasterPlane(ring("native", 1.0, 0.2), ring("websocket", 2.0, 1.5)).choice.path, "native");
});

test("both planes are timed only where the native plane was the rule's choice under auto, and the ring is left on the faster", async () => {
  const native: DataPlaneChoice = { path: "native", why: "every worker has the native addon and TLS is off" };
  const run = async (current: DataPlaneChoice, asked: "auto" | "native" | "websocket", speeds: Record<string, number>) => {
    const probed: string[] = [];
    const wired: string[] = [];
    const out = await timeRingPlanes({
      current,
      asked,
      probe: async (path) => (probed.push(path), ring(path, speeds[path]!)),
      rewire: async (plane) => void wired.push(plane.path),
    });
    return { probed, wired, out };
  };
  const auto = await run(native, "auto", { native: 0.24, websocket: 1.12 });
  assert.deepEqual([auto.probed, auto.wired, auto.out.choice.path], [["native", "websocket"], ["websocket", "websocket"], "websocket"]);
  const back = await run(native, "auto", { native: 2.2, websocket: 0.9 });
  assert.deepEqual([back.probed, back.wired, back.out.choice.path], [["native", "websocket"], ["websocket", "native"], "native"]);
  const asked = await run(native, "native", { native: 0.24, websocket: 1.12 });
  assert.deepEqual([asked.probed, asked.wired, asked.out.choice], [["native"], [], native]);
  const sockets: DataPlaneChoice = { path: "websocket", why: "TLS is on: tensors stay on the encrypted WebSocket links" };
  const tls = await run(sockets, "auto", { native: 9, websocket: 1 });
  assert.deepEqual([tls.probed, tls.wired, tls.out.choice], [["websocket"], [], sockets]);
});
