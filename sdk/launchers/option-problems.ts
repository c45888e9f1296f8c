import { ConfigError } from "../errors/errors";

/** An option Kubernetes would reject, and what to give instead. */
export interface OptionProblem {
  summary: string;
  hint: string;
}

/** One ConfigError naming every problem, so a command line is fixed in one go. */
export function throwProblems(problems: readonly OptionProblem[]): void {
  if (problems.length === 1) throw new ConfigError(problems[0]!.summary, { hint: problems[0]!.hint });
  if (problems.length > 1) {
    throw new ConfigError(
      `${problems.length} problems with the options:\n${problems.map((p) => `  ${p.summary} (${p.hint})`).join("\n")}`,
      { hint: "fix each and run it again; nothing was written" },
    );
  }
}
