import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

/**
 * Every relative link in the README, ARCHITECTURE.md and docs/ reaches a file that exists, and
 * every #anchor a heading of that file (GitHub's slugs): a guide a user follows never ends at a
 * page that moved.
 */
const ROOT = path.join(__dirname, "..", "..", "..");
const PAGES = [
  "README.md",
  "ARCHITECTURE.md",
  ...fs
    .readdirSync(path.join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, "")
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

function anchors(file: string): Set<string> {
  const text = fs.readFileSync(file, "utf8").replace(/```[\s\S]*?```/g, "");
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

/** [text](target) links outside code blocks, with their line. */
function links(text: string): Array<{ target: string; line: number }> {
  const out: Array<{ target: string; line: number }> = [];
  let inCode = false;
  text.split("\n").forEach((l, i) => {
    if (l.startsWith("```")) inCode = !inCode;
    if (inCode) return;
    for (const m of l.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)) out.push({ target: m[1]!, line: i + 1 });
  });
  return out;
}

test("every relative link in the guides reaches a file, and every anchor a heading", () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of PAGES) {
    for (const { target, line } of links(fs.readFileSync(path.join(ROOT, page), "utf8"))) {
      if (/^[a-z]+:/.test(target)) continue;
      checked++;
      const [file, anchor] = target.split("#") as [string, string | undefined];
      const abs = file === "" ? path.join(ROOT, page) : path.join(ROOT, path.dirname(page), file);
      if (!fs.existsSync(abs)) broken.push(`${page}:${line}: ${target} (no such file)`);
      else if (anchor && abs.endsWith(".md") && !anchors(abs).has(anchor))
        broken.push(`${page}:${line}: ${target} (no such heading)`);
    }
  }
  assert.ok(checked > 50, `found ${checked} links`);
  assert.deepEqual(broken, []);
});

test("slugs are GitHub's", () => {
  assert.equal(slug("shard: optimizer (ZeRO-1)"), "shard-optimizer-zero-1");
  assert.equal(slug("Adding a comm hook or a summing scheme"), "adding-a-comm-hook-or-a-summing-scheme");
  assert.equal(slug("`compression`: 16-bit"), "compression-16-bit");
});

/** Every TypeScript file of the SDK: its path from the project's root and its text. */
function sdkSources(dir = path.join(ROOT, "sdk")): Array<{ file: string; text: string }> {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const abs = path.join(dir, entry.name);
    if (entry.isDirectory()) return sdkSources(abs);
    return entry.name.endsWith(".ts") ? [{ file: path.relative(ROOT, abs), text: fs.readFileSync(abs, "utf8") }] : [];
  });
}

/** Every "docs/page.md#section" the SDK's own code names, in its messages or comments. */
function sdkDocLinks(): Array<{ target: string; where: string }> {
  return sdkSources().flatMap(({ file, text }) =>
    text.split("\n").flatMap((l, i) => [...l.matchAll(/docs\/[\w-]+\.md(?:#[\w-]+)?/g)].map((m) => ({ target: m[0], where: `${file}:${i + 1}` }))),
  );
}

test("every page and section the SDK's errors and hints point to exists, and none points to a README section that is gone", () => {
  const found = sdkDocLinks();
  assert.ok(found.some((f) => f.target === "docs/strategies.md#fit-options"), "the fit options' hint names its section");
  const broken = found.flatMap(({ target, where }) => {
    const [file, anchor] = target.split("#") as [string, string | undefined];
    const abs = path.join(ROOT, file);
    if (!fs.existsSync(abs)) return [`${where}: ${target} (no such file)`];
    return anchor && !anchors(abs).has(anchor) ? [`${where}: ${target} (no such heading)`] : [];
  });
  assert.deepEqual(broken, []);
  const stale = sdkSources().filter(({ text }) => /README's API/.test(text)).map(({ file }) => file);
  assert.deepEqual(stale, [], "the README has no API section");
});
