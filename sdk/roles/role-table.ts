import { DataReplica } from "./data/replica";
import { StageRuntime } from "./pipeline/stage";
import { PsReplica } from "./ps/ps-worker";
import { ParamServer } from "./ps/param-server";
import type { RoleTable } from "./role";

/**
 * The roles a worker process can play, by the name the driver's load message gives. The worker's
 * entry points hand this table to the host; strategies name the roles they load, and a test
 * checks every name a strategy gives is here.
 */
export const ROLES: RoleTable = Object.freeze({
  replica: (msg, attachments, env) => DataReplica.load(msg, attachments, env),
  stage: (msg, attachments, env) => StageRuntime.load(msg, attachments, env),
  "ps-worker": (msg, attachments, env) => PsReplica.load(msg, attachments, env),
  "ps-server": (msg, attachments, env) => ParamServer.role(msg, attachments, env),
});
