/**
 * Whole lines from text that arrives in pieces (pipe chunks, stream writes): a piece may end
 * mid-line, and that part waits for the rest. Lines lose a trailing "\r"; blank ones are dropped.
 */
export class LineSplitter {
  private partial = "";

  /** The lines `text` completes. */
  push(text: string): string[] {
    const parts = (this.partial + text).split("\n");
    this.partial = parts.pop() ?? "";
    return parts.map((l) => l.replace(/\r$/, "")).filter((l) => l.trim() !== "");
  }

  /** What is left when the text ends without a newline. */
  end(): string[] {
    const rest = this.partial;
    this.partial = "";
    return rest.trim() === "" ? [] : [rest];
  }
}
