import assert from "node:assert/strict";
import { test } from "node:test";
import { AuthError, ProtocolError, TimeoutError } from "../../sdk/errors/errors";
import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import { VERSION } from "../../sdk/protocol/sdk-version";
import { acceptHandshake, offerHandshake } from "../../sdk/transport/handshake";
import { inProcessLinkPair } from "../../sdk/transport/in-process-link";
import type { Link } from "../../sdk/transport/link";

const TOKEN = "correct-horse-battery-staple";

/** Records every text frame sent over a link, to check what crosses the wire. */
function spy(link: Link, frames: string[]): Link {
  const send = link.sendText.bind(link);
  link.sendText = (t: string) => {
    frames.push(t);
    send(t);
  };
  return link;
}

test("both sides prove the token and the token never crosses the wire", async () => {
  const frames: string[] = [];
  const [server, client] = inProcessLinkPair();
  spy(server, frames);
  spy(client, frames);
  const [auth, challenge] = await Promise.all([
    acceptHandshake(server, { token: TOKEN, timeoutMs: 1000, server: { version: VERSION, pid: 1 } }),
    offerHandshake(client, { token: TOKEN, timeoutMs: 1000, role: "peer", peer: { session: "s1", rank: 2, link: "ring" }, who: "worker" }),
  ]);
  assert.equal(auth.role, "peer");
  assert.deepEqual(auth.peer, { session: "s1", rank: 2, link: "ring" });
  assert.equal(challenge.server.pid, 1);
  assert.equal(frames.length, 3);
  for (const f of frames) assert.ok(!f.includes(TOKEN) && !f.includes(Buffer.from(TOKEN).toString("base64")));
});

test("a wrong token is refused on both sides with AuthError", async () => {
  const [server, client] = inProcessLinkPair();
  const results = await Promise.allSettled([
    acceptHandshake(server, { token: TOKEN, timeoutMs: 1000, server: { version: VERSION, pid: 1 } }),
    offerHandshake(client, { token: "not-the-right-token!", timeoutMs: 1000, role: "driver", who: "worker rank 0" }),
  ]);
  assert.equal(results[0].status, "rejected");
  assert.equal(results[1].status, "rejected");
  const [s, c] = results.map((r) => (r as PromiseRejectedResult).reason as Error);
  assert.ok(s instanceof AuthError, String(s));
  assert.ok(c instanceof AuthError, String(c));
  assert.match(c.message, /refused/);
  assert.ok(!c.message.includes(TOKEN) && !s.message.includes(TOKEN));
});

test("a server that cannot prove the token is not trusted by the client", async () => {
  const [server, client] = inProcessLinkPair();
  const results = await Promise.allSettled([
    acceptHandshake(server, { token: "server-thinks-this-is-it", timeoutMs: 1000, server: { version: VERSION, pid: 1 } }),
    offerHandshake(client, { token: TOKEN, timeoutMs: 1000, role: "driver", who: "worker" }),
  ]);
  assert.ok((results[1] as PromiseRejectedResult).reason instanceof AuthError);
});

test("a driver refuses a worker of another meshtrain version before proving the token, naming both versions", async () => {
  const [server, client] = inProcessLinkPair();
  const results = await Promise.allSettled([
    acceptHandshake(server, { token: TOKEN, timeoutMs: 1000, server: { version: "0.0.9", pid: 1 } }),
    offerHandshake(client, { token: TOKEN, timeoutMs: 1000, role: "driver", who: "worker rank 1" }),
  ]);
  const err = (results[1] as PromiseRejectedResult).reason as ProtocolError;
  assert.ok(err instanceof ProtocolError, String(err));
  assert.match(err.message, new RegExp(`worker rank 1 at .* runs meshtrain 0\\.0\\.9, this driver runs ${VERSION.replace(/\./g, "\\.")}`));
  assert.match(err.hint ?? "", /meshtrain bundle/);
  assert.equal(results[0].status, "rejected", "the worker's side ends too");
});

test("garbage, binary frames or silence during the handshake end it with a typed error", async () => {
  {
    const [server, client] = inProcessLinkPair();
    const p = acceptHandshake(server, { token: TOKEN, timeoutMs: 1000, server: { version: VERSION, pid: 1 } });
    client.sendText("{not json");
    await assert.rejects(p, ProtocolError);
  }
  {
    const [server, client] = inProcessLinkPair();
    const p = acceptHandshake(server, { token: TOKEN, timeoutMs: 1000, server: { version: VERSION, pid: 1 } });
    void client.sendBinary(Buffer.alloc(8));
    await assert.rejects(p, /binary frame .* before authentication/);
  }
  {
    const [server] = inProcessLinkPair();
    const p = acceptHandshake(server, { token: TOKEN, timeoutMs: 100, server: { version: VERSION, pid: 1 } });
    await assert.rejects(p, (e: unknown) => e instanceof TimeoutError && /waiting for "auth"/.test(e.message));
  }
  {
    const [server, client] = inProcessLinkPair();
    const p = acceptHandshake(server, { token: TOKEN, timeoutMs: 1000, server: { version: VERSION, pid: 1 } });
    // A peer one version ahead: refused, the error naming its version.
    client.sendText(JSON.stringify({ type: "auth", v: PROTOCOL_VERSION + 1, nonce: "0".repeat(64), mac: "0".repeat(64), role: "driver" }));
    await assert.rejects(p, new RegExp(`protocol version ${PROTOCOL_VERSION + 1}`));
  }
});
