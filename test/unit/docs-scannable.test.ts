import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

/**
 * Docs a user can scan: a table cell says what a thing is in a sentence or two and links to its
 * section, and prose is wrapped. A strategy's options once sat in one table cell of 15,666
 * characters, and a line of ARCHITECTURE.md ran to 3,043.
 */
const ROOT = path.join(__dirname, "..", "..", "..");
const MAX_CELL = 400;
const MAX_LINE = 200;

/** Each place in `text` (a Markdown page) over the limits, outside fenced code. */
function overLimits(text: string): string[] {
  const out: string[] = [];
  let fenced = false;
  text.split("\n").forEach((line, i) => {
    if (line.startsWith("```")) fenced = !fenced;
    if (fenced) return;
    if (line.startsWith("|")) {
      const longest = Math.max(...line.split("|").map((c) => c.trim().length));
      if (longest > MAX_CELL) out.push(`line ${i + 1}: a table cell of ${longest} characters`);
    } else if (line.length > MAX_LINE) out.push(`line ${i + 1}: ${line.length} characters`);
  });
  return out;
}

test(`no table cell in the docs is over ${MAX_CELL} characters, and no prose line over ${MAX_LINE}`, () => {
  const pages = ["README.md", "ARCHITECTURE.md", ...fs.readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
  assert.ok(pages.length > 10, `found ${pages.length} pages`);
  const over = pages.flatMap((p) => overLimits(fs.readFileSync(path.join(ROOT, p), "utf8")).map((w) => `${p} ${w}`));
  assert.deepEqual(over, [], "move the detail to a section of its own and link it from the cell; wrap prose at about 100 columns");
  // The check itself: a long cell and a long line are found, code blocks are not read.
  assert.equal(overLimits(`| a | ${"x".repeat(401)} |\n${"y".repeat(201)}\n\`\`\`\n${"z".repeat(300)}\n\`\`\`\n`).length, 2);
});
