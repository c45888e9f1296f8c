import { JoinListener } from "../../sdk/cluster/join-listener";

/** The driver's side of the relay bench: a join port that takes browser tabs, in a process of its own; prints its address, serves until killed. */
async function main(): Promise<void> {
  const token = process.env.MESHTRAIN_TOKEN!;
  const j = await JoinListener.open({ host: "127.0.0.1", port: 0, token, expected: 1, handshakeTimeoutMs: 10_000, browsers: { maxFrameBytes: 64 * 2 ** 20 } });
  process.stdout.write(`${JSON.stringify({ url: j.url })}\n`);
  setInterval(() => undefined, 60_000);
}

void main();
