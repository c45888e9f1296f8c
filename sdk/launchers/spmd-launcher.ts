import { LaunchError } from "../errors/errors";
import { describeExit, LocalWorkerProcess } from "../members/local-process";
import type { LaunchContext, Launcher } from "./launcher";
import { localAddressTowards } from "../transport/routes";

/**
 * fromEnv()'s rank 0: the driver starts its own worker, which joins like the other ranks'
 * processes do, listening on the interface they reach this machine by (not loopback: its
 * peers are on other nodes).
 */
export class SpmdLauncher implements Launcher {
  private proc: LocalWorkerProcess | undefined;
  private stopping = false;

  constructor(private readonly source: string) {}

  async start(ctx: LaunchContext): Promise<void> {
    const host = await localAddressTowards(ctx.joinUrl);
    const args = [
      "--join",
      ctx.joinUrl,
      "--rank",
      "0",
      "--rank-source",
      this.source,
      "--join-timeout",
      String(ctx.joinTimeoutS),
    ];
    const proc = LocalWorkerProcess.start({ ...process.env, MESHTRAIN_TOKEN: ctx.token }, [], undefined, {
      host,
      joins: args,
    });
    this.proc = proc;
    void proc.whenExited().then((exit) => {
      if (this.stopping) return;
      ctx.abort(
        new LaunchError(`rank 0's worker (pid ${proc.pid}, started by this driver) exited (${describeExit(exit)})`, {
          hint: `its output:\n${proc.output() || "(none)"}`,
        }),
      );
    });
  }

  async notes(): Promise<string[]> {
    return [];
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.proc?.stop(2000);
  }
}
