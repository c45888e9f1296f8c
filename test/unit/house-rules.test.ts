import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import * as ts from "typescript";

/**
 * The house stays readable: small files, short functions. A function may run longer only with
 * its reason in a comment just above it that starts "long:". Import cycles are checked by
 * `npm run test:cycles`.
 */
const ROOT = path.join(__dirname, "..", "..", "..");
const MAX_FILE_LINES = 350;
const MAX_FUNCTION_LINES = 60;

function sources(dir: string, ext: readonly string[]): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sources(rel, ext));
    else if (ext.some((e) => entry.name.endsWith(e))) out.push(rel);
  }
  return out;
}

const TS_SOURCES = [...sources("sdk", [".ts"]), ...sources("kernel-ext", [".ts"])];

test("no source file is over 350 lines", () => {
  const files = [...TS_SOURCES, ...sources(path.join("native", "src"), [".c", ".h"])];
  assert.ok(files.length > 100, `found ${files.length} source files`);
  const long = files.map((f) => ({ f, lines: fs.readFileSync(path.join(ROOT, f), "utf8").split("\n").length })).filter((x) => x.lines > MAX_FILE_LINES);
  assert.deepEqual(long, [], `split these files: ${long.map((x) => `${x.f} (${x.lines} lines)`).join(", ")}`);
});

/** Functions longer than the limit, except those whose comment above says why ("long: ..."). */
function longFunctions(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    const fn = ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n) || ts.isConstructorDeclaration(n);
    if (fn && (n as ts.FunctionLikeDeclaration).body) {
      const from = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line;
      const lines = sf.getLineAndCharacterOfPosition(n.getEnd()).line - from + 1;
      const holder = ts.isArrowFunction(n) || ts.isFunctionExpression(n) ? n.parent : n;
      const comments = ts.getLeadingCommentRanges(text, holder.getFullStart()) ?? [];
      const reasoned = comments.some((c) => /long:/.test(text.slice(c.pos, c.end)));
      if (lines > MAX_FUNCTION_LINES && !reasoned) found.push(`${file}:${from + 1} (${lines} lines)`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

test("no function is over 60 lines without a reason given in a comment", () => {
  const long = TS_SOURCES.flatMap((f) => longFunctions(f, fs.readFileSync(path.join(ROOT, f), "utf8")));
  assert.deepEqual(long, [], `split these functions, or say above each why it is long ("// long: ..."): ${long.join(", ")}`);
  // The rule itself can fail: a long function without a reason is found, one with a reason is not.
  const body = Array.from({ length: 70 }, (_, i) => `  const a${i} = ${i};`).join("\n");
  assert.equal(longFunctions("x.ts", `function f(): void {\n${body}\n}\n`).length, 1);
  assert.equal(longFunctions("x.ts", `// long: one table of cases, clearer whole\nfunction f(): void {\n${body}\n}\n`).length, 0);
});

/** File names that mean the same thing in every folder they appear in (register.ts: each backend's registration with TF.js). */
const SAME_MEANING = new Set(["index.ts", "main.ts", "planner.ts", "options.ts", "driver-runtime.ts", "register.ts"]);

test("no file name means two different things in two folders of sdk/", () => {
  const byName = new Map<string, string[]>();
  for (const f of sources("sdk", [".ts"])) {
    const name = path.basename(f);
    byName.set(name, [...(byName.get(name) ?? []), f]);
  }
  const twice = [...byName].filter(([name, files]) => files.length > 1 && !SAME_MEANING.has(name)).map(([, files]) => files.join(" and "));
  assert.deepEqual(twice, [], "rename one of each pair so the name says which concept it holds");
});
