import { DEFAULT_WORKER_OPTIONS, runWorker, type WorkerOptions } from "./main";
import type { JoinTarget } from "./join-driver";

/**
 * The program a driver forks for each local worker (members/local-process.ts), with an IPC
 * channel: flags as the launcher writes them, the token from the environment. A file of its own,
 * not a `require.main` check in main.ts: in the worker bundle every module is one file, and
 * that check held there too, so the bundle started a second worker.
 */

function flag(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

function flags(argv: string[], name: string): string[] {
  return argv.flatMap((a, i) => (a === name && argv[i + 1] !== undefined ? [argv[i + 1]!] : []));
}

/** `--join <url> --rank <r> --rank-source <why>`: a local worker that joins (fromEnv()'s rank 0). */
function joinFlags(argv: string[]): { join?: JoinTarget } {
  const url = flag(argv, "--join");
  if (url === undefined) return {};
  const rank = flag(argv, "--rank");
  const claim = rank === undefined ? null : { rank: Number(rank), source: flag(argv, "--rank-source") ?? "--rank" };
  return { join: { url, claim, timeoutMs: Number(flag(argv, "--join-timeout") ?? 600) * 1000 } };
}

{
  const argv = process.argv.slice(2);
  const options: WorkerOptions = {
    host: flag(argv, "--host") ?? "127.0.0.1",
    port: Number(flag(argv, "--port") ?? 0),
    token: process.env.MESHTRAIN_TOKEN,
    maxFrameBytes: Number(flag(argv, "--max-frame-bytes") ?? DEFAULT_WORKER_OPTIONS.maxFrameBytes),
    exitWithDriver: argv.includes("--exit-with-driver"),
    modules: flags(argv, "--module"),
    ...joinFlags(argv),
  };
  runWorker(options).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(2);
    },
  );
}
