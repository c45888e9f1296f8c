import { z } from "zod";
import { SSH_HOST_PATTERN } from "../config/launcher-spec";

/** The options of the builder's launcher methods (fromEnv, ssh, slurm), checked as they are given. */

const timeoutMs = z.number().int().min(100).max(86_400_000);
const driverHost = z.string().min(1).max(256).optional();
const command = z.string().min(1).max(2000).optional();

export const FromEnvOptionsSchema = z.strictObject({
  driver: z.string().min(1).max(300).optional(),
  port: z.number().int().min(1).max(65535).optional(),
  workers: z.number().int().min(1).max(1024).optional(),
  timeoutMs: timeoutMs.default(600_000),
});

export const SshHostsSchema = z.array(z.string().regex(SSH_HOST_PATTERN, "must be host, user@host or user@host:port")).min(1).max(256);

export const SshOptionsSchema = z.strictObject({
  workersPerHost: z.number().int().min(1).max(64).default(1),
  command,
  sshArgs: z.array(z.string().max(2000)).max(64).default([]),
  driverHost,
  port: z.number().int().min(0).max(65535).default(0),
  timeoutMs: timeoutMs.default(120_000),
});

export const SlurmOptionsSchema = z.strictObject({
  nodes: z.number().int().min(1).max(4096),
  tasksPerNode: z.number().int().min(1).max(256).default(1),
  partition: z.string().min(1).max(200).optional(),
  time: z.string().min(1).max(50).optional(),
  account: z.string().min(1).max(200).optional(),
  args: z.array(z.string().max(2000)).max(64).default([]),
  command,
  driverHost,
  outputDir: z.string().min(1).max(4096).optional(),
  port: z.number().int().min(0).max(65535).default(0),
  timeoutMs: timeoutMs.default(600_000),
});

export type SshOptions = z.input<typeof SshOptionsSchema>;
export type SlurmOptions = z.input<typeof SlurmOptionsSchema>;

/** Drops the keys whose value is undefined (the spec's optional fields are absent, not undefined). */
export function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
