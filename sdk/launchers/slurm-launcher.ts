import * as fs from "node:fs";
import * as path from "node:path";
import { LaunchError, TimeoutError, type MeshtrainError } from "../errors/errors";
import type { SlurmLauncherSpec } from "../config/launcher-spec";
import type { LaunchContext, Launcher } from "./launcher";
import {
  cancelJob,
  cancelJobNow,
  controllerHost,
  ENDED_STATES,
  jobStatus,
  submitJob,
  type JobStatus,
} from "./slurm-job";
import { meshtrainCommand } from "./remote-command";
import { localBundle } from "./bundle-ship";
import { extractShared } from "./bundle-shared";
import { shellQuote } from "./ssh-target";
import { slurmScript, type SlurmWorkers } from "./slurm-script";
import { localAddressTowards } from "../transport/routes";

/** Every job this process submitted and has not seen end: cancelled when it exits. */
const jobs = new Set<string>();
let hooked = false;

/**
 * slurm(): the workers as one batch job, `srun` starting nodes x tasksPerNode of them; each
 * takes its rank from SLURM_PROCID and joins the driver. The job is watched while they join: a
 * job that ends first, or is still pending when the wait runs out (cancelled then), fails the launch
 * with Slurm's state and reason. close(), the driver's exit and an interrupt cancel it.
 */
export class SlurmLauncher implements Launcher {
  private id: string | undefined;
  private status: JobStatus | null = null;
  private poller: NodeJS.Timeout | undefined;
  private done = false;
  private readonly outputFile: string;
  /** The bundle sent with the job (ship "sbcast"). */
  private shipped: { key: string; how: string } | null = null;

  /** `timeoutMs`: how long the driver waits for the workers to join (for the message of a job still pending). */
  constructor(
    private readonly spec: SlurmLauncherSpec,
    private readonly timeoutMs: number,
  ) {
    this.outputFile = path.resolve(spec.outputDir ?? ".", "meshtrain-slurm-%j.out");
  }

  async listenHost(): Promise<string> {
    if (this.spec.driverHost) return this.spec.driverHost;
    const controller = await controllerHost();
    return controller ? localAddressTowards(`ws://${controller}:1`).catch(() => "0.0.0.0") : "0.0.0.0";
  }

  private sbatchArgs(): string[] {
    const s = this.spec;
    return [
      "--job-name=meshtrain",
      `--nodes=${s.nodes}`,
      `--ntasks-per-node=${s.tasksPerNode}`,
      `--output=${this.outputFile}`,
      ...(s.partition ? [`--partition=${s.partition}`] : []),
      ...(s.time ? [`--time=${s.time}`] : []),
      ...(s.account ? [`--account=${s.account}`] : []),
      ...s.args,
    ];
  }

  async start(ctx: LaunchContext): Promise<void> {
    const script = slurmScript(this.workers(), ctx.joinUrl, ctx.joinTimeoutS);
    this.id = await submitJob(script, this.sbatchArgs(), { ...process.env, MESHTRAIN_TOKEN: ctx.token });
    jobs.add(this.id);
    if (!hooked) {
      hooked = true;
      process.once("exit", () => jobs.forEach(cancelJobNow));
    }
    const poll = async (): Promise<void> => {
      if (this.done) return;
      this.status = (await jobStatus(this.id!)) ?? this.status;
      const s = this.status;
      if (!this.done && s && ENDED_STATES.has(s.state)) {
        jobs.delete(this.id!);
        this.done = true;
        return ctx.abort(
          new LaunchError(
            `Slurm job ${this.id} ended (${s.state}, exit code ${s.exitCode}${s.reason && s.reason !== "None" ? `, ${s.reason}` : ""}) before all its workers joined`,
            { hint: `its output (${this.outputPath()}):\n${this.outputTail()}` },
          ),
        );
      }
      this.poller = setTimeout(() => void poll(), 1000);
      this.poller.unref();
    };
    await poll();
  }

  /**
   * What the job's workers run. Shipped: this machine's bundle (made once, kept in its cache),
   * copied beside the job's output, which the batch host reads, for sbcast to send from there.
   */
  private workers(): SlurmWorkers {
    if (this.spec.ship === "never") return { command: meshtrainCommand(this.spec.command) };
    const b = localBundle(this.spec.bundleBackends);
    if (this.spec.ship === "shared") {
      const shared = extractShared(b, path.resolve(this.spec.sharedDir!));
      this.shipped = {
        key: b.key,
        how: `runs from ${path.dirname(path.dirname(shared.program))} (${shared.extracted ? "extracted now" : "already there"})`,
      };
      return { command: `${shellQuote(this.spec.node)} ${shellQuote(shared.program)}` };
    }
    const beside = path.join(path.dirname(this.outputFile), `meshtrain-bundle-${b.key}.tar.gz`);
    if (!fs.existsSync(beside)) {
      fs.copyFileSync(b.file, `${beside}.${process.pid}.partial`);
      fs.renameSync(`${beside}.${process.pid}.partial`, beside);
    }
    this.shipped = { key: b.key, how: `sent to the job's nodes by sbcast from ${beside}` };
    return { bundle: beside, node: this.spec.node };
  }

  /** A job still pending when the join's time ran out: cancelled, and reported with Slurm's reason. */
  async late(): Promise<MeshtrainError | undefined> {
    const s = (await jobStatus(this.id!)) ?? this.status;
    if (s?.state !== "PENDING") return undefined;
    await this.stop();
    return new TimeoutError(
      `Slurm job ${this.id} was still pending after ${Math.round(this.timeoutMs / 1000)} s (reason: ${s.reason}); it was cancelled`,
      {
        details: { waitingFor: `Slurm job ${this.id} to start` },
        hint: "ask for fewer nodes or less time, another partition (sinfo shows them), or raise timeoutMs",
      },
    );
  }

  private outputPath(): string {
    return this.outputFile.replace("%j", this.id ?? "%j");
  }

  private outputTail(): string {
    try {
      return fs.readFileSync(this.outputPath(), "utf8").trim().split("\n").slice(-20).join("\n") || "(empty)";
    } catch {
      return "(not readable from the driver's machine)";
    }
  }

  /** Called once every worker has joined: the job runs, and its node list is known. */
  async notes(): Promise<string[]> {
    clearTimeout(this.poller);
    this.status = (await jobStatus(this.id!)) ?? this.status;
    return [
      `Slurm job ${this.id} on ${this.status?.nodes || "(node list unknown)"}, output in ${this.outputPath()}`,
      ...(this.shipped ? [`Slurm: the worker bundle ${this.shipped.key} ${this.shipped.how}`] : []),
    ];
  }

  async stop(): Promise<void> {
    this.done = true;
    clearTimeout(this.poller);
    if (this.id === undefined || !jobs.has(this.id)) return;
    jobs.delete(this.id);
    await cancelJob(this.id);
  }
}
