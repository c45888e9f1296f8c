import { VERSION } from "../protocol/sdk-version";
import { shellQuote } from "./ssh-target";

/** What the job's workers run: `command` from an installation, or a bundle shipped with the job. */
export type SlurmWorkers = { command: string } | { bundle: string; node: string };

/**
 * The batch script: srun starting every worker, each joining the driver. With a bundle, first
 * sbcast sends it to every node of the allocation and one task a node extracts it, into a
 * folder named after its node (nodes may share /tmp), which that node's workers run from.
 * --kill-on-bad-exit: one worker failing ends the step, so the job does not sit half-dead.
 */
export function slurmScript(workers: SlurmWorkers, joinUrl: string, joinTimeoutS: number): string {
  const join = `worker --join ${shellQuote(joinUrl)} --join-timeout ${joinTimeoutS}`;
  if ("command" in workers) return `#!/bin/sh\nexec srun --kill-on-bad-exit=1 ${workers.command} ${join}\n`;
  const program = `meshtrain-worker-${VERSION}/meshtrain-worker.js`;
  return [
    "#!/bin/sh",
    "set -e",
    'd="${TMPDIR:-/tmp}/meshtrain-$SLURM_JOB_ID"',
    `sbcast -f ${shellQuote(workers.bundle)} "$d.tar.gz"`,
    `srun -N "$SLURM_JOB_NUM_NODES" -n "$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 sh -c 'mkdir -p "$0-$SLURMD_NODENAME" && tar -xzf "$0.tar.gz" -C "$0-$SLURMD_NODENAME"' "$d"`,
    `exec srun --kill-on-bad-exit=1 sh -c 'exec "$1" "$0-$SLURMD_NODENAME/${program}" ${join.replace(/'/g, "'\\''")}' "$d" ${shellQuote(workers.node)}`,
    "",
  ].join("\n");
}
