import type { LauncherSpec } from "../config/launcher-spec";
import type { Launcher } from "./launcher";
import { SpmdLauncher } from "./spmd-launcher";
import { SshLauncher } from "./ssh-launcher";
import { SlurmLauncher } from "./slurm-launcher";

/** The launcher a join() cluster's spec asks for; fromEnv's ranks other than 0 never get here. */
export function makeLauncher(spec: LauncherSpec, timeoutMs: number): Launcher {
  switch (spec.kind) {
    case "spmd":
      return new SpmdLauncher(spec.source);
    case "ssh":
      return new SshLauncher(spec);
    case "slurm":
      return new SlurmLauncher(spec, timeoutMs);
  }
}
