/** What `meshtrain preflight` prints on a host: its versions, and why the driver is not reachable from there (null: it is). */
export interface PreflightReport {
  meshtrain: string;
  node: string;
  reach: string | null;
}

/** What one preflight command gave: its exit code and output. */
export interface PreflightRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function lastLine(text: string): string {
  return (
    text
      .trim()
      .split("\n")
      .filter((l) => l.trim() !== "")
      .pop()
      ?.trim() ?? ""
  );
}

/** Why workers cannot start on a host, and whether the worker bundle (run by the host's node) would let them. */
export interface PreflightProblem {
  why: string;
  /** meshtrain is missing, of another version or not runnable there, but the host's node may run the bundle. */
  bundleHelps: boolean;
}

/**
 * Why workers cannot start on a host, from its preflight's result, or null when they can. Ssh's
 * own failures exit 255 (no route, refused, a key it does not accept, an unknown host key);
 * the shell's 127 is a command it did not find; node's "Cannot find module" is meshtrain absent.
 */
export function judgePreflight(
  run: PreflightRun,
  o: { command: string; version: string; nodeMajor: number; driverUrl: string },
): string | null {
  return preflightProblem(run, o)?.why ?? null;
}

// long: one verdict a failure, in the order a host's problems show
export function preflightProblem(
  run: PreflightRun,
  o: { command: string; version: string; nodeMajor: number; driverUrl: string },
): PreflightProblem | null {
  const err = lastLine(run.stderr);
  const bundle = (why: string): PreflightProblem => ({ why, bundleHelps: true });
  const only = (why: string): PreflightProblem => ({ why, bundleHelps: false });
  if (run.code === 255) return only(`unreachable over ssh (${err || "ssh exited 255"})`);
  if (run.code === 127 || run.code === 126)
    return bundle(
      `cannot run ${o.command} there (${err || `exit ${run.code}`}): install node and meshtrain at those paths, or pass ssh(hosts, { command }) or { ship: "auto" }`,
    );
  if (/Cannot find module/.test(run.stderr))
    return bundle(
      `meshtrain is missing there (${/Cannot find module '([^']+)'/.exec(run.stderr)?.[1] ?? err}): install meshtrain ${o.version} there, or pass ssh(hosts, { command }) or { ship: "auto" }`,
    );
  const line = run.stdout
    .trim()
    .split("\n")
    .reverse()
    .find((l) => l.startsWith("{"));
  let report: PreflightReport;
  try {
    report = JSON.parse(line ?? "") as PreflightReport;
  } catch {
    return bundle(
      `${o.command} preflight did not answer as meshtrain does (exit ${run.code}${err ? `: ${err}` : ""}); is it meshtrain ${o.version}?`,
    );
  }
  const major = Number(/^v(\d+)/.exec(String(report.node))?.[1]);
  if (!(major >= o.nodeMajor)) return only(`node ${report.node} there; meshtrain needs node ${o.nodeMajor} or newer`);
  if (report.meshtrain !== o.version)
    return bundle(
      `meshtrain ${report.meshtrain} there; the driver runs ${o.version}: install the same version on every host, or pass { ship: "auto" }`,
    );
  if (report.reach !== null)
    return only(
      `the driver's address ${o.driverUrl} is not reachable from there (${report.reach}): pass ssh(hosts, { driverHost }) with an address the hosts can reach, and check firewalls`,
    );
  return null;
}
