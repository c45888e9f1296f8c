import { z } from "zod";
import { BUNDLE_BACKENDS } from "./bundle-backends";

/** An ssh() host: "host", "user@host" or "user@host:port" (ssh's own config applies to the name). */
export const SSH_HOST_PATTERN = /^(?:[A-Za-z0-9._-]+@)?(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

const command = z.string().min(1).max(2000).optional();
const driverHost = z.string().min(1).max(256).optional();
/** What a shipped bundle's workers compute with (`meshtrain bundle --backends`): "webgpu" adds Dawn, for GPU hosts. */
const bundleBackends = z.array(z.enum(BUNDLE_BACKENDS)).min(1).max(BUNDLE_BACKENDS.length);

export const SshHostsSchema = z
  .array(z.string().regex(SSH_HOST_PATTERN, "must be host, user@host or user@host:port"))
  .min(1)
  .max(256);

/** ssh(hosts): workers started through the system's ssh client, workersPerHost on each host in order. */
export const SshLauncherSpecSchema = z.strictObject({
  kind: z.literal("ssh"),
  hosts: SshHostsSchema,
  workersPerHost: z.number().int().min(1).max(64),
  /** What runs meshtrain on a host (a shell command line); default: the driver's node and meshtrain paths. */
  command,
  /** Extra arguments for every ssh command (-i key, -F config, -J jump host). */
  sshArgs: z.array(z.string().max(2000)).max(64),
  /** The address the hosts reach the driver at; default: the interface that routes to them. */
  driverHost,
  /**
   * The worker bundle (`meshtrain bundle`) copied to hosts over ssh and run there by their node:
   * "auto" where meshtrain is missing, not runnable or of another version and no `command` was
   * given; "always"; "never". Cached on each host by its contents, so a second launch copies nothing.
   */
  ship: z.enum(["auto", "always", "never"]),
  /** The node program on the hosts that runs a shipped bundle; default "node", found on the host's PATH. */
  node: z.string().min(1).max(1000),
  bundleBackends,
});

/** slurm(): the workers as one batch job (sbatch, then srun inside it). */
export const SlurmLauncherSpecSchema = z.strictObject({
  kind: z.literal("slurm"),
  nodes: z.number().int().min(1).max(4096),
  tasksPerNode: z.number().int().min(1).max(256),
  partition: z.string().min(1).max(200).optional(),
  /** Slurm's time limit, e.g. "00:30:00". */
  time: z.string().min(1).max(50).optional(),
  account: z.string().min(1).max(200).optional(),
  /** More sbatch arguments, e.g. ["--cpus-per-task=4", "--mem=8G"]. */
  args: z.array(z.string().max(2000)).max(64),
  command,
  driverHost,
  /** Where the job's output file goes (the current directory). */
  outputDir: z.string().min(1).max(4096).optional(),
  /**
   * "sbcast": the worker bundle goes with the job. It is put beside the job's output (a folder
   * the batch host reads), sent by sbcast to every node of the allocation, extracted there,
   * and run by `node`. "shared": extracted once into `sharedDir`, a folder every node mounts at
   * the same path, and run from there. "never" (default): `command`, or this driver's paths.
   */
  ship: z.enum(["never", "sbcast", "shared"]),
  /** With ship "shared": the folder (on a file system the nodes share) the bundle is extracted into, by its key. */
  sharedDir: z.string().min(1).max(4096).optional(),
  /** The node program on the nodes that runs a shipped bundle; default "node", found on their PATH. */
  node: z.string().min(1).max(1000),
  bundleBackends,
});

/**
 * Who starts the workers that join (join()'s workers): nobody (the user starts them), the
 * job itself (fromEnv()), ssh or Slurm. Each is stopped when the cluster closes.
 */
export const LauncherSpecSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    /** fromEnv(): the same script runs on every node; rank 0 drives and starts its own worker, the others join it. */
    kind: z.literal("spmd"),
    rank: z.number().int().min(0).max(1023),
    /** The environment variables the rank came from, for messages. */
    source: z.string().min(1).max(200),
  }),
  SshLauncherSpecSchema,
  SlurmLauncherSpecSchema,
]);

export type SlurmLauncherSpec = z.infer<typeof SlurmLauncherSpecSchema>;
export type SshLauncherSpec = z.infer<typeof SshLauncherSpecSchema>;

export type LauncherSpec = z.infer<typeof LauncherSpecSchema>;
