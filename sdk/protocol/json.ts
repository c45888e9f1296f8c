/**
 * JSON for the wire, with numbers kept whole: JSON has no NaN or Infinity (JSON.stringify
 * writes null), so a diverged loss would arrive as null and the message be refused. Non-finite
 * numbers travel as {"$num": "NaN" | "Infinity" | "-Infinity"}, an object no message schema
 * uses for anything else, and are numbers again after parsing.
 */
const TAG = "$num";
const TAGGED = `{"${TAG}":`;

function replacer(_key: string, value: unknown): unknown {
  if (typeof value === "number" && !Number.isFinite(value)) return { [TAG]: String(value) };
  return value;
}

function reviver(_key: string, value: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const tagged = (value as Record<string, unknown>)[TAG];
  if (typeof tagged !== "string" || Object.keys(value).length !== 1) return value;
  if (tagged === "NaN") return NaN;
  if (tagged === "Infinity") return Infinity;
  if (tagged === "-Infinity") return -Infinity;
  return value;
}

export function toWireJson(value: unknown): string {
  return JSON.stringify(value, replacer);
}

/** Throws SyntaxError as JSON.parse does. Text without a tagged number is parsed without a reviver. */
export function fromWireJson(text: string): unknown {
  return text.includes(TAGGED) ? JSON.parse(text, reviver) : JSON.parse(text);
}
