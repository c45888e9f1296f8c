import type { ChildProcess } from "node:child_process";
import { LineSplitter } from "../util/lines";

/**
 * The last lines a launcher's child (an ssh client, sbatch) wrote, for the error that reports
 * its failure. Its output is not shown as it comes: a joined worker's lines reach the driver
 * through its connection, and would appear twice.
 */
export function keepTail(child: ChildProcess, lines = 20): () => string {
  const tail: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    const split = new LineSplitter();
    const add = (ls: string[]): void => {
      tail.push(...ls);
      tail.splice(0, Math.max(0, tail.length - lines));
    };
    stream?.on("data", (chunk: Buffer) => add(split.push(chunk.toString("utf8"))));
    stream?.on("end", () => add(split.end()));
  }
  return () => tail.join("\n");
}
