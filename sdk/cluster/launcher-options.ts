import { z } from "zod";
import { SlurmLauncherSpecSchema, SshLauncherSpecSchema } from "../config/launcher-spec";
import { DEFAULT_BUNDLE_BACKENDS } from "../config/bundle-backends";

/**
 * The options of the builder's launcher methods (fromEnv, ssh, slurm), checked as they are
 * given: a launcher's spec with its defaults, plus where the driver listens and how long it waits.
 */

const listening = {
  port: z.number().int().min(0).max(65535).default(0),
  timeoutMs: z.number().int().min(100).max(86_400_000),
};

export const FromEnvOptionsSchema = z.strictObject({
  driver: z.string().min(1).max(300).optional(),
  port: z.number().int().min(1).max(65535).optional(),
  workers: z.number().int().min(1).max(1024).optional(),
  timeoutMs: listening.timeoutMs.default(600_000),
});

export const SshOptionsSchema = SshLauncherSpecSchema.omit({ kind: true, hosts: true }).extend({
  workersPerHost: SshLauncherSpecSchema.shape.workersPerHost.default(1),
  sshArgs: SshLauncherSpecSchema.shape.sshArgs.default([]),
  ship: SshLauncherSpecSchema.shape.ship.default("auto"),
  node: SshLauncherSpecSchema.shape.node.default("node"),
  bundleBackends: SshLauncherSpecSchema.shape.bundleBackends.default([...DEFAULT_BUNDLE_BACKENDS]),
  port: listening.port,
  timeoutMs: listening.timeoutMs.default(120_000),
});

export const SlurmOptionsSchema = SlurmLauncherSpecSchema.omit({ kind: true })
  .extend({
    tasksPerNode: SlurmLauncherSpecSchema.shape.tasksPerNode.default(1),
    args: SlurmLauncherSpecSchema.shape.args.default([]),
    ship: SlurmLauncherSpecSchema.shape.ship.default("never"),
    node: SlurmLauncherSpecSchema.shape.node.default("node"),
    bundleBackends: SlurmLauncherSpecSchema.shape.bundleBackends.default([...DEFAULT_BUNDLE_BACKENDS]),
    port: listening.port,
    timeoutMs: listening.timeoutMs.default(600_000),
  })
  // A folder named without ship "shared" would be ignored, and "shared" without one has nowhere to go.
  .refine((o) => (o.ship === "shared") === (o.sharedDir !== undefined), {
    message: 'ship "shared" and sharedDir go together: name the folder the nodes share with ship: "shared"',
    path: ["sharedDir"],
  });

export type SshOptions = z.input<typeof SshOptionsSchema>;
export type SlurmOptions = z.input<typeof SlurmOptionsSchema>;

/** Drops the keys whose value is undefined (the spec's optional fields are absent, not undefined). */
export function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
