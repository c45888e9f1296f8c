import * as fs from "node:fs";

/**
 * The cores this process may run on (Linux: its CPU affinity, as taskset, Slurm's --cpu-bind or
 * a container's cpuset leave it), or undefined where the system does not say. Two workers
 * pinned to different cores of one machine do not share a core; os.availableParallelism()
 * alone (1 each) would count them as sharing one.
 */
export function allowedCores(): number[] | undefined {
  let status: string;
  try {
    status = fs.readFileSync("/proc/self/status", "utf8");
  } catch {
    return undefined;
  }
  const list = /^Cpus_allowed_list:\s*(.+)$/m.exec(status)?.[1];
  return list === undefined ? undefined : parseCoreList(list);
}

/** "0-3,8,10-11" as [0, 1, 2, 3, 8, 10, 11]; undefined if it is not such a list. */
export function parseCoreList(list: string): number[] | undefined {
  const cores: number[] = [];
  for (const part of list.trim().split(",")) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return undefined;
    const [from, to] = [Number(m[1]), Number(m[2] ?? m[1])];
    if (to < from || to > 65535 || cores.length + to - from >= 4096) return undefined;
    for (let c = from; c <= to; c++) cores.push(c);
  }
  return cores;
}
