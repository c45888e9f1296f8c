import { PROTOCOL_VERSION } from "../../sdk/protocol/version";
import { fromWireJson } from "../../sdk/protocol/json";
import { offerHandshake } from "../../sdk/transport/handshake";
import type { Link } from "../../sdk/transport/link";
import { nextFrame } from "../../sdk/transport/next-frame";
import { dial, listen } from "../../sdk/transport/ws-endpoint";

/**
 * The far end of the relay bench: echoes every binary frame. `listen`: on its own port, as a
 * Node worker is reached; `relay <driver url>`: registered at the driver's relay and taking each
 * connection dialled to it, as a browser tab is reached (the tab's steps, in Node).
 */
function echo(link: Link): void {
  link.setHandlers({ text: () => undefined, binary: (d) => void link.sendBinary(d).catch(() => undefined), pong: () => undefined, close: () => undefined });
}

async function main(): Promise<void> {
  const [mode, driver] = process.argv.slice(2);
  const token = process.env.MESHTRAIN_TOKEN!;
  const maxFrameBytes = 64 * 2 ** 20;
  if (mode === "listen") {
    const l = await listen({ host: "127.0.0.1", port: 0, maxFrameBytes, maxConnections: 16, onLink: echo });
    process.stdout.write(`${JSON.stringify({ url: l.url })}\n`);
    return;
  }
  const reg = await dial(`${driver}/relay`, { maxFrameBytes, timeoutMs: 10_000 });
  await offerHandshake(reg, { token, timeoutMs: 10_000, role: "relay", who: "the relay" });
  const first = await nextFrame(reg, {
    timeoutMs: 10_000,
    parse: (t) => fromWireJson(t) as { type: string; url: string; id: string; v: number },
    onTimeout: () => new Error("no address from the relay"),
    onBinary: () => new Error("binary frame"),
    onClose: () => new Error("relay closed"),
  });
  if (first.type !== "listening" || first.v !== PROTOCOL_VERSION) throw new Error(`unexpected ${first.type}`);
  reg.setHandlers({
    text: (t) => {
      const m = fromWireJson(t) as { conn: string };
      void dial(`${driver}/relay/${first.id}/${m.conn}`, { maxFrameBytes, timeoutMs: 10_000 }).then(echo);
    },
    binary: () => undefined,
    pong: () => undefined,
    close: () => process.exit(0),
  });
  process.stdout.write(`${JSON.stringify({ url: first.url })}\n`);
}

void main();
