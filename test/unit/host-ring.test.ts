import assert from "node:assert/strict";
import { test } from "node:test";
import { hostRing } from "../../sdk/plan/host-ring";
import { dataWiring } from "../../sdk/plan/wiring";

test("a ring of workers sharing machines keeps each machine's workers together", () => {
  // Ranks that arrived interleaved: rank order would cross between machines at every hop.
  const interleaved = hostRing(["a", "b", "a", "b"]);
  assert.deepEqual(interleaved.order, [0, 2, 1, 3]);
  assert.match(interleaved.note!, /ring ordered by machine \(a: 0, 2; b: 1, 3\): 2 hops between machines instead of 4 in rank order/);
  // Machines in order of their lowest rank, ranks in order within one.
  assert.deepEqual(hostRing(["x", "y", "y", "x", "z", "y"]).order, [0, 3, 1, 2, 5, 4]);
  // ssh's workersPerHost and Slurm's block distribution already come machine by machine.
  const blocks = hostRing(["a", "a", "b", "b"]);
  assert.deepEqual(blocks.order, [0, 1, 2, 3]);
  assert.match(blocks.note!, /rank order, which already keeps each machine's workers together .*: 2 hops between machines/);
  // One worker a machine, all on one, or machines unknown: rank order, nothing to say.
  for (const hosts of [["a", "b", "c"], ["a", "a", "a"], ["a", undefined, "a"]]) assert.deepEqual(hostRing(hosts), { order: [0, 1, 2], note: null });
  assert.deepEqual(dataWiring([0, 2, 1, 3]).groups, [[0, 2, 1, 3]]);
});
