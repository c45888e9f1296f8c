import assert from "node:assert/strict";
import { test } from "node:test";
import { relayNote } from "../../sdk/plan/relay-hops";
import { relayPath } from "../../sdk/protocol/relay";

test("the plan names the ring links that pass through the relay: those whose accepting end is a tab", () => {
  const tab = { tab: true };
  const node = {};
  assert.equal(relayNote([0, 1, 2], [node, node, node]), null);
  assert.match(relayNote([0, 1, 2], [tab, tab, node])!, /: 0-1, 1-2; 1 link\(s\) direct; the ring probe times them as they run before a fit$/);
  // Ring order, not rank order: rank 2 follows the tab at rank 0.
  assert.match(relayNote([0, 2, 1], [tab, node, node])!, /: 0-2; 2 link\(s\) direct/);
  const measured = relayNote([0, 1], [tab, node], { members: 2, path: "websocket", linkBytesPerSecond: 123e6, latencySeconds: 0.0004 })!;
  assert.match(measured, /: 0-1; 1 link\(s\) direct; the ring as it runs, relay included, measured 123 MB\/s a hop and 0\.40 ms a phase$/);
  assert.equal(relayNote([0], [tab]), null, "one worker has no ring");
});

test("relay paths: register, reach a tab, take a connection; anything else is no relay path", () => {
  const id = "A".repeat(22);
  const conn = "b".repeat(22);
  assert.deepEqual(relayPath("/relay"), { kind: "register" });
  assert.deepEqual(relayPath(`/relay/${id}`), { kind: "reach", id });
  assert.deepEqual(relayPath(`/relay/${id}/${conn}`), { kind: "take", id, conn });
  for (const bad of ["/", "/relay/short", `/relay/${id}/${conn}/more`, `/relay/${id}/../x`, "/relayx", `/relay/${"x".repeat(65)}`]) assert.equal(relayPath(bad), null, bad);
});
