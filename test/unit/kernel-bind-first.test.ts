import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { bindBeforeReading, KernelBindError, socketAddress } from "../../kernel-ext/bind-first";

/**
 * The kernel's sockets, real zeromq ones (tslab's copy): none is read until all five are bound,
 * a message sent before the kernel bound reaches the shell handler, and the heartbeat echoes.
 * The subclasses only record the order of binds and reads; the sockets underneath are real.
 */

type Zmq = Parameters<typeof bindBeforeReading>[1];
type Socket = InstanceType<Zmq["Router"]> & { receive(): Promise<Buffer[]> };
const zmq = require(require.resolve("zeromq", { paths: [path.dirname(require.resolve("tslab/package.json"))] })) as Zmq & {
  Dealer: new () => { connect(a: string): void; send(f: string[]): Promise<void>; receive(): Promise<Buffer[]>; close(): void };
  Request: new () => { connect(a: string): void; send(f: string): Promise<void>; receive(): Promise<Buffer[]>; close(): void };
};

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

function recorded(events: string[]): Zmq {
  const watch = (Base: new () => object, name: string): Zmq["Router"] =>
    class extends (Base as new () => Socket) {
      override bind(address: string): Promise<void> {
        return super.bind(address).then(() => void events.push(`bound ${name}`));
      }
      override receive(): Promise<Buffer[]> {
        events.push(`read ${name}`);
        return super.receive();
      }
    };
  return { Publisher: watch(zmq.Publisher, "pub"), Router: watch(zmq.Router, "router"), Reply: watch(zmq.Reply, "reply") };
}

test("the kernel binds its five sockets before it reads any, and loses nothing sent before", { timeout: 30_000 }, async () => {
  const ports = { iopub_port: 0, shell_port: 0, control_port: 0, stdin_port: 0, hb_port: 0 };
  for (const k of Object.keys(ports) as Array<keyof typeof ports>) ports[k] = await freePort();
  const configPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "mt-kernel-")), "connection.json");
  fs.writeFileSync(configPath, JSON.stringify({ ...ports, transport: "tcp", ip: "127.0.0.1", key: "k" }));

  const shell = new zmq.Dealer();
  shell.connect(`tcp://127.0.0.1:${ports.shell_port}`);
  const early = shell.send(["early"]);

  const events: string[] = [];
  const handled: string[] = [];
  const proto = { init: async (): Promise<void> => assert.fail("tslab's own init ran") };
  bindBeforeReading({ ZmqServer: { prototype: proto } }, recorded(events));
  const server = Object.assign(Object.create(proto) as { init(): Promise<void> } & Record<string, Socket>, {
    configPath,
    handleShellMessage: async (sock: Socket, ...frames: Buffer[]): Promise<void> => {
      handled.push(frames[frames.length - 1].toString());
      await sock.send(frames);
    },
  });
  try {
    await server.init();
    await early;
    const [answer] = await shell.receive();
    assert.equal(answer.toString(), "early", "the message sent before the kernel bound came back through the shell handler");
    assert.deepEqual(handled, ["early"]);
    const firstRead = events.findIndex((e) => e.startsWith("read"));
    assert.equal(events.slice(0, firstRead).filter((e) => e.startsWith("bound")).length, 5, events.join(", "));

    const hb = new zmq.Request();
    hb.connect(`tcp://127.0.0.1:${ports.hb_port}`);
    await hb.send("ping");
    assert.equal((await hb.receive())[0].toString(), "ping");
    hb.close();
  } finally {
    shell.close();
    for (const name of ["iopub", "shell", "control", "stdin", "hb"]) (server[name] as unknown as { close?(): void }).close?.();
  }
});

function serverFor(configPath: string): { init(): Promise<void> } & Record<string, Socket> {
  const proto = { init: async (): Promise<void> => assert.fail("tslab's own init ran") };
  bindBeforeReading({ ZmqServer: { prototype: proto } }, zmq);
  return Object.assign(Object.create(proto) as { init(): Promise<void> } & Record<string, Socket>, {
    configPath,
    handleShellMessage: async (sock: Socket, ...frames: Buffer[]): Promise<void> => void (await sock.send(frames)),
  });
}

function closeAll(server: Record<string, Socket>): void {
  for (const name of ["iopub", "shell", "control", "stdin", "hb"]) (server[name] as unknown as { close?(): void }).close?.();
}

test("over Jupyter's ipc transport the kernel binds the files ip-port, where Jupyter's clients connect", { timeout: 30_000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mt-kernel-"));
  const ip = path.join(dir, "kernel-ipc");
  const configPath = path.join(dir, "connection.json");
  const ports = { iopub_port: 1, shell_port: 2, control_port: 3, stdin_port: 4, hb_port: 5 };
  fs.writeFileSync(configPath, JSON.stringify({ ...ports, transport: "ipc", ip, key: "k" }));
  assert.equal(socketAddress({ transport: "ipc", ip }, 2), `ipc://${ip}-2`);
  const server = serverFor(configPath);
  const shell = new zmq.Dealer();
  try {
    await server.init();
    assert.ok(fs.existsSync(`${ip}-2`), "the shell socket's file exists");
    shell.connect(`ipc://${ip}-2`);
    await shell.send(["over ipc"]);
    assert.equal((await shell.receive())[0].toString(), "over ipc");
  } finally {
    shell.close();
    closeAll(server);
  }
});

test("a port taken before the kernel bound it: a KernelBindError naming the ports and what to do", { timeout: 30_000 }, async () => {
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  const takenPort = (taken.address() as net.AddressInfo).port;
  const ports = { iopub_port: await freePort(), shell_port: takenPort, control_port: await freePort(), stdin_port: await freePort(), hb_port: await freePort() };
  const configPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "mt-kernel-")), "connection.json");
  fs.writeFileSync(configPath, JSON.stringify({ ...ports, transport: "tcp", ip: "127.0.0.1", key: "k" }));
  const server = serverFor(configPath);
  try {
    await assert.rejects(server.init(), (err: Error) => {
      assert.ok(err instanceof KernelBindError, String(err));
      assert.match(err.message, new RegExp(`ports .*${takenPort}`));
      assert.match(err.message, /start a new one \(a restart keeps the same ports\)/);
      return true;
    });
  } finally {
    taken.close();
    closeAll(server);
  }
});
