import assert from "node:assert/strict";
import { test } from "node:test";
import { HandshakeLimiter } from "../../sdk/transport/handshake-limiter";

test("a host is refused for a while after too many failed handshakes, and only that host", () => {
  let now = 0;
  const l = new HandshakeLimiter({ maxFailures: 3, windowMs: 1000, banMs: 5000 }, () => now);
  assert.equal(HandshakeLimiter.host("10.0.0.7:51234"), "10.0.0.7");
  assert.equal(HandshakeLimiter.host("::1:51234"), "::1");
  assert.ok(!l.failed("a") && !l.failed("a"));
  assert.ok(l.allowed("a"));
  assert.ok(l.failed("a"), "the third failure starts the ban");
  assert.ok(!l.allowed("a") && l.allowed("b"));
  now = 4999;
  assert.ok(!l.allowed("a"));
  now = 5000;
  assert.ok(l.allowed("a"), "the ban ends");
});

test("failures spread beyond the window, or followed by a success, never add up to a ban", () => {
  let now = 0;
  const l = new HandshakeLimiter({ maxFailures: 3, windowMs: 1000, banMs: 5000 }, () => now);
  for (let i = 0; i < 10; i++) {
    now += 600;
    assert.ok(!l.failed("a"), `failure ${i} at ${now} ms`);
  }
  l.failed("b");
  l.failed("b");
  l.succeeded("b");
  assert.ok(!l.failed("b"));
  assert.ok(l.allowed("a") && l.allowed("b"));
});
