import type { Command } from "commander";
import { isMeshtrainError } from "../errors/errors";

/**
 * Parses the command line and runs `program`; a failure is printed as `NAME: message [code]`
 * (a meshtrain error, exit 2) or with its stack (anything else, exit 1). `meshtrain` and the
 * worker bundle's program report alike.
 */
export function runProgram(program: Command, name: string): void {
  program.parseAsync(process.argv).catch((err: unknown) => {
    const text = isMeshtrainError(err)
      ? `${err.message} [${err.code}]`
      : err instanceof Error
        ? (err.stack ?? err.message)
        : String(err);
    process.stderr.write(`${name}: ${text}\n`);
    process.exit(isMeshtrainError(err) ? 2 : 1);
  });
}
