import type { ChildProcess } from "node:child_process";
import { LineSplitter } from "./lines";

export type OnLine = (stream: "stdout" | "stderr", text: string) => void;

/**
 * Follows a child's stdout and stderr line by line: each line to `onLine` as it arrives, and
 * the last `keep` lines kept for the error that reports the child's failure.
 */
export function followLines(child: ChildProcess, onLine?: OnLine, keep = 20): () => string {
  const tail: string[] = [];
  for (const stream of ["stdout", "stderr"] as const) {
    const split = new LineSplitter();
    const emit = (line: string): void => {
      tail.push(line);
      if (tail.length > keep) tail.shift();
      onLine?.(stream, line);
    };
    child[stream]?.on("data", (chunk: Buffer) => split.push(chunk.toString("utf8")).forEach(emit));
    child[stream]?.on("end", () => split.end().forEach(emit));
  }
  return () => tail.join("\n");
}
