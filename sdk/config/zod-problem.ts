import type { z } from "zod";
import { ConfigError } from "../errors/errors";
import { unknownKeysLine } from "./unknown-keys";
import { describeGiven, isTensor } from "../util/describe-value";

/** Turns zod's issues into one ConfigError that names each bad field and what was given. */
export function configErrorFrom(what: string, error: z.ZodError, hint?: string, schema?: z.ZodType): ConfigError {
  const lines = error.issues.map((issue) => {
    const unknown = schema ? unknownKeysLine(schema, issue) : null;
    if (unknown) return unknown;
    const path = issue.path.length > 0 ? issue.path.join(".") : "(value)";
    return `${path}: ${issue.message}`;
  });
  return new ConfigError(`invalid ${what}: ${lines.join("; ")}`, {
    hint: hint ?? `fix the fields named above; each option's meaning and default: ${pageFor(what)}`,
  });
}

/** The page and section that describe the options named `what` (test/unit/doc-links.test.ts holds every such link to a heading). */
function pageFor(what: string): string {
  return what.startsWith("fit options") ? "docs/strategies.md#fit-options" : "docs/strategies.md#the-builder";
}

export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string, hint?: string): z.output<S> {
  // A tensor where options go (plan(model, x) as predict is called) would be named property by property.
  if (isTensor(value)) {
    throw new ConfigError(`invalid ${what}: ${describeGiven(value)}, not an object of options`, {
      hint: `pass an object, e.g. { batchSize: 64 }; each option's meaning and default: ${pageFor(what)}`,
    });
  }
  const result = schema.safeParse(value);
  if (!result.success) throw configErrorFrom(what, result.error, hint, schema);
  return result.data;
}
