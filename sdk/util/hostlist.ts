/**
 * The first host of a Slurm host list ("node[01-04,07],gpu3" is node01): in a job step, task 0
 * runs there under Slurm's default (block) distribution, so that is where rank 0 listens.
 * Every bracket takes its first entry, zero padding kept ("rack[2-3]-n[08-09]" is rack2-n08).
 */
export function firstHost(list: string): string | undefined {
  let depth = 0;
  let end = list.length;
  for (let i = 0; i < list.length; i++) {
    const ch = list[i];
    if (ch === "[") depth++;
    else if (ch === "]") depth--;
    else if (ch === "," && depth === 0) {
      end = i;
      break;
    }
  }
  const first = list.slice(0, end).trim();
  if (first === "" || depth < 0) return undefined;
  const expanded = first.replace(/\[([^\]]*)\]/g, (_, inner: string) => inner.split(",")[0]!.split("-")[0]!);
  return /^[A-Za-z0-9._-]+$/.test(expanded) ? expanded : undefined;
}
