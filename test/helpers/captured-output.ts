/**
 * What this process writes to stdout and stderr from now on, line by line (the writes still go
 * through): for tests of what the driver shows.
 */
export interface CapturedOutput {
  lines(stream: "stdout" | "stderr"): string[];
  text(): string;
  restore(): void;
}

export function captureOutput(): CapturedOutput {
  const seen = { stdout: [] as string[], stderr: [] as string[] };
  const originals = { stdout: process.stdout.write, stderr: process.stderr.write };
  for (const stream of ["stdout", "stderr"] as const) {
    const target = process[stream];
    const original = target.write.bind(target) as (chunk: unknown, ...rest: unknown[]) => boolean;
    target.write = ((chunk: unknown, ...rest: unknown[]): boolean => {
      seen[stream].push(...String(chunk).split("\n").filter((l) => l !== ""));
      return original(chunk, ...rest);
    }) as typeof target.write;
  }
  return {
    lines: (stream) => seen[stream],
    text: () => [...seen.stdout, ...seen.stderr].join("\n"),
    restore: () => {
      process.stdout.write = originals.stdout;
      process.stderr.write = originals.stderr;
    },
  };
}
