import * as os from "node:os";
import { TimeoutError } from "../errors/errors";
import type { ClusterSpec, WorkersSpec } from "../config/cluster-spec";
import type { Launcher } from "../launchers/launcher";
import type { JoinListener } from "./join-listener";

/** A member to start or reach: a worker's rank or a server's index, and its address where it runs elsewhere. */
export type Role = { role: "worker" | "ps"; index: number; url?: string };

/**
 * Has the launcher start the workers that join `joins`, then waits for them; a wait that runs
 * out gets the launcher's account of why when it has one (a Slurm job still pending).
 */
export async function launchThenRoles(
  spec: ClusterSpec,
  w: Extract<WorkersSpec, { kind: "join" }>,
  joins: JoinListener,
  launcher: Launcher,
  token: string,
): Promise<Role[]> {
  joins.attach(launcher);
  await launcher.start({
    joinUrl: joinAddress(joins.url),
    token,
    joinTimeoutS: Math.ceil(w.timeoutMs / 1000),
    abort: (err) => joins.abort(err),
  });
  try {
    return await rolesOf(spec, joins, true);
  } catch (err) {
    throw (err instanceof TimeoutError && (await launcher.late?.())) || err;
  }
}

/** Tabs join by opening the invite link: printed at once, and handed to onInvite (a notebook draws it). */
export function invite(w: Extract<WorkersSpec, { kind: "join" }>, url: string): void {
  process.stderr.write(`meshtrain: browser tabs join as workers by opening ${url}\n`);
  w.onInvite?.(url);
}

/**
 * Who to start or reach: workers (local, listed, or joining `joins` now), then parameter servers,
 * the same program given different parts at load.
 */
export async function rolesOf(spec: ClusterSpec, joins: JoinListener | undefined, launched = false): Promise<Role[]> {
  const roles: Role[] = [];
  const w = spec.workers;
  if (w.kind === "local") for (let r = 0; r < w.count; r++) roles.push({ role: "worker", index: r });
  else if (w.kind === "remote")
    w.urls.forEach((u, r) => roles.push({ role: "worker", index: r, url: u.replace(/\/$/, "") }));
  else if (joins) {
    if (!launched)
      process.stderr.write(
        `meshtrain: waiting up to ${Math.round(w.timeoutMs / 1000)} s for ${w.count} worker(s) to join: meshtrain worker --join ${joinAddress(joins.url)}\n`,
      );
    for (const j of await joins.waitForAll(w.timeoutMs)) roles.push({ role: "worker", index: j.rank, url: j.url });
  }
  const sv = spec.servers;
  if (sv?.kind === "local") for (let i = 0; i < sv.count; i++) roles.push({ role: "ps", index: i });
  else if (sv) sv.urls.forEach((u, i) => roles.push({ role: "ps", index: i, url: u.replace(/\/$/, "") }));
  return roles;
}

/** The join address as workers elsewhere would dial it: a wildcard host shown as this machine's name. */
export function joinAddress(url: string): string {
  return url.replace(/\/\/(0\.0\.0\.0|\[::\])(?=:)/, `//${os.hostname()}`);
}
