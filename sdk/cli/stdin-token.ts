import { ConfigError } from "../errors/errors";

/**
 * `meshtrain worker --token-stdin`, as launchers start it over ssh: the token is the first line
 * of stdin (never argv, where `ps` on the host shows it), and stdin stays open for the
 * worker's life. When it closes (the launcher's ssh client ended, the driver died, the link
 * was cut) the worker exits: sshd keeps a remote command running after its client is gone
 * unless the command itself notices.
 */
export function tokenFromStdin(timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const done = (err: Error | null, token?: string): void => {
      clearTimeout(timer);
      process.stdin.off("data", onData);
      process.stdin.off("end", onEnd);
      if (err) reject(err);
      else resolve(token!);
    };
    const onData = (chunk: Buffer): void => {
      text += chunk.toString("utf8");
      const nl = text.indexOf("\n");
      if (nl >= 0) done(null, text.slice(0, nl).trim());
      else if (text.length > 4096)
        done(
          new ConfigError("--token-stdin: the first line of stdin is over 4096 characters", {
            hint: "write the token and a newline to the worker's stdin",
          }),
        );
    };
    const onEnd = (): void =>
      done(
        new ConfigError("--token-stdin: stdin closed before a token line arrived", {
          hint: "write the token and a newline to the worker's stdin and keep it open",
        }),
      );
    const timer = setTimeout(
      () =>
        done(
          new ConfigError(`--token-stdin: no token line on stdin within ${timeoutMs} ms`, {
            hint: "write the token and a newline to the worker's stdin",
          }),
        ),
      timeoutMs,
    );
    process.stdin.on("data", onData);
    process.stdin.once("end", onEnd);
  });
}

/** Exits once stdin closes: the process that started this worker (an ssh client, a launcher) is gone. */
export function exitWhenStdinCloses(): void {
  process.stdin.on("data", () => undefined);
  process.stdin.once("end", () => {
    process.stderr.write("meshtrain worker: stdin closed (the launcher that started this worker is gone); exiting\n");
    process.exit(0);
  });
}
