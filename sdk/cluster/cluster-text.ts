import type { WorkerSnapshot } from "../config/worker-snapshot";
import type { WorkerHandle } from "../members/worker-handle";
import { esc, htmlRow } from "../viz/escape";

/** The registry's line for a cluster: size, strategy, age, state. */
export function describeLine(c: ClusterParts, launchedAt: number): string {
  const age = Math.round((Date.now() - launchedAt) / 1000);
  return `${c.size} worker(s)${c.servers.length ? ` and ${c.servers.length} server(s)` : ""}, strategy "${c.strategy}", launched ${age >= 60 ? `${Math.floor(age / 60)} min ${age % 60} s` : `${age} s`} ago, ${c.state}`;
}

/** What a cluster shows of itself in a notebook and on a terminal. */
export interface ClusterParts {
  size: number;
  strategy: string;
  state: string;
  workers: readonly WorkerSnapshot[];
  servers: readonly WorkerHandle[];
  notes: readonly string[];
  /** Ranks that left during a fit, with why: listed, marked, and not counted. */
  departed?: ReadonlyMap<number, { summary: string }>;
  /** Spare workers still idle (`.spares(n)`). */
  spares?: readonly WorkerSnapshot[];
}

/** A worker's row's mark when it left during a fit. */
function leftMark(c: ClusterParts, rank: number): string {
  const why = c.departed?.get(rank);
  return why === undefined ? "" : `  left during a fit: ${why.summary}`;
}

/** "3 worker(s)", and how many of those listed left ("2 worker(s), 1 more left during a fit"). */
function countLine(c: ClusterParts): string {
  const left = c.departed?.size ?? 0;
  return `${c.workers.length - left} worker(s)${left > 0 ? ` (${left} more left during a fit)` : ""}`;
}

export function clusterHtml(c: ClusterParts): string {
  const rows = c.workers
    .map((w) =>
      htmlRow([
        w.rank,
        w.address,
        w.info.backend,
        w.info.device,
        `${(w.info.memoryBytes / 2 ** 30).toFixed(1)} GiB`,
        `${processOf(w)}${esc(leftMark(c, w.rank))}`,
      ]),
    )
    .join("");
  const notes = c.notes.map((n) => `<li>${n.replace(/</g, "&lt;")}</li>`).join("");
  const servers = c.servers
    .map((s) =>
      htmlRow([
        `server ${s.rank}`,
        s.address,
        s.info?.backend ?? "?",
        s.info?.device ?? "?",
        "",
        `${s.info?.pid ?? "?"}${s.process ? " (local)" : ""}`,
      ]),
    )
    .join("");
  const spares = (c.spares ?? [])
    .map((w) =>
      htmlRow([
        "spare",
        w.address,
        w.info.backend,
        w.info.device,
        `${(w.info.memoryBytes / 2 ** 30).toFixed(1)} GiB`,
        `${processOf(w)}, idle`,
      ]),
    )
    .join("");
  return `<p><b>meshtrain cluster</b>: ${countLine(c)}${c.servers.length ? ` and ${c.servers.length} parameter server(s)` : ""}, strategy "${c.strategy}", ${c.state}</p><table>${htmlRow(["rank", "address", "backend", "device", "memory", "pid"], "th")}${rows}${spares}${servers}</table>${notes ? `<ul>${notes}</ul>` : ""}`;
}

export function clusterText(c: ClusterParts): string {
  const lines = [`meshtrain cluster: ${countLine(c)}, strategy "${c.strategy}", ${c.state}`];
  for (const w of c.workers) {
    lines.push(
      `  rank ${w.rank}  ${w.address}  ${w.info.backend} on ${w.info.device}  ${processOf(w, "pid ")}${leftMark(c, w.rank)}`,
    );
  }
  for (const w of c.spares ?? [])
    lines.push(`  spare  ${w.address}  ${w.info.backend} on ${w.info.device}  ${processOf(w, "pid ")}, idle`);
  for (const s of c.servers)
    lines.push(`  parameter server ${s.rank}  ${s.address}  pid ${s.info?.pid ?? "?"}${s.process ? " (local)" : ""}`);
  return lines.join("\n");
}

/** A worker's process as the tables show it: a pid (local or not), or a browser tab's name. */
function processOf(
  w: { info: { pid: number; node: string; hostname: string }; local: boolean },
  pidLabel = "",
): string {
  return w.info.node === "browser" ? w.info.hostname : `${pidLabel}${w.info.pid}${w.local ? " (local)" : ""}`;
}
