import * as fs from "node:fs";

/** The part of zeromq's sockets the kernel's loops use. */
interface Socket extends AsyncIterable<Buffer[]> {
  bind(address: string): Promise<void>;
  send(frames: Buffer[]): Promise<void>;
}

interface Zmq {
  Publisher: new () => Socket;
  Router: new () => Socket;
  Reply: new () => Socket;
}

interface ConnectionInfo {
  transport: string;
  ip: string;
  iopub_port: number;
  shell_port: number;
  control_port: number;
  stdin_port: number;
  hb_port: number;
}

interface Server {
  configPath: string;
  connInfo: ConnectionInfo;
  iopub: Socket;
  shell: Socket;
  control: Socket;
  stdin: Socket;
  hb: Socket;
  handleShellMessage(sock: Socket, ...frames: Buffer[]): Promise<void>;
}

type ServerProto = { init(this: Server): Promise<void> };

/**
 * Where a socket binds, as Jupyter writes it: `tcp://ip:port`, or for the ipc transport a file
 * named `ip-port` (tslab wrote `ipc://ip:port`, a path no client connects to).
 */
export function socketAddress(info: Pick<ConnectionInfo, "transport" | "ip">, port: number): string {
  return info.transport === "ipc" ? `ipc://${info.ip}-${port}` : `${info.transport}://${info.ip}:${port}`;
}

/**
 * A port in the connection file was taken before the kernel bound it: Jupyter picks free ports
 * by binding and closing them, and any process may take one in between. The kernel cannot pick
 * others (the front end already knows these), so it says so and exits; Jupyter's restarter
 * starts a kernel that died before it ever answered again on new ports (jupyter_client's
 * random_ports_until_alive), while a restart asked for by hand keeps the ports it had.
 */
export class KernelBindError extends Error {
  constructor(info: ConnectionInfo, cause: unknown) {
    const ports = [info.shell_port, info.iopub_port, info.stdin_port, info.control_port, info.hb_port].join(", ");
    super(
      `meshtrain kernel: could not bind its sockets on ${info.transport} ${info.ip} (ports ${ports}): ` +
        `${cause instanceof Error ? cause.message : String(cause)}. Another process took a port Jupyter chose. ` +
        `Jupyter's server starts a kernel that dies on start-up again on new ports; elsewhere shut this kernel ` +
        `down and start a new one (a restart keeps the same ports).`,
    );
    this.name = "KernelBindError";
  }
}

/** Hands every message `sock` receives to `each`, not waiting for it (as tslab), until the socket is closed. */
async function serve(sock: Socket, each: (frames: Buffer[]) => unknown): Promise<void> {
  for await (const frames of sock) each(frames);
}

/** The heartbeat: every message back as it came, each reply sent before the next is read. */
async function echo(sock: Socket): Promise<void> {
  for await (const frames of sock) await sock.send(frames);
}

/**
 * tslab starts reading the shell, control and heartbeat sockets before it binds its five
 * sockets, and zeromq 6 refuses to receive or send on a socket whose bind is still pending
 * (EBUSY, "Socket is blocked by a bind or unbind operation"). When Jupyter's first
 * kernel_info_request came in while a bind was pending, the shell's loop died and the kernel
 * never answered anything again: the front end waited 60 s and said the kernel did not respond
 * (it failed CI once, in a tutorial). This init binds all five first, then reads; zeromq keeps
 * what arrives in between, so nothing is lost.
 */
export function bindBeforeReading(jupyterModule: { ZmqServer: { prototype: ServerProto } }, zmq: Zmq): void {
  jupyterModule.ZmqServer.prototype.init = async function (this: Server): Promise<void> {
    const info = JSON.parse(fs.readFileSync(this.configPath, "utf-8")) as ConnectionInfo;
    this.connInfo = info;
    this.iopub = new zmq.Publisher();
    this.shell = new zmq.Router();
    this.control = new zmq.Router();
    this.stdin = new zmq.Router();
    this.hb = new zmq.Reply();
    const at = (port: number): string => socketAddress(info, port);
    await Promise.all([
      this.iopub.bind(at(info.iopub_port)),
      this.shell.bind(at(info.shell_port)),
      this.control.bind(at(info.control_port)),
      this.stdin.bind(at(info.stdin_port)),
      this.hb.bind(at(info.hb_port)),
    ]).catch((err: unknown) => {
      throw new KernelBindError(info, err);
    });
    void serve(this.shell, (frames) => this.handleShellMessage(this.shell, ...frames));
    void serve(this.control, (frames) => this.handleShellMessage(this.control, ...frames));
    void echo(this.hb);
  };
}
