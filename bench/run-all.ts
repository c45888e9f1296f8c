import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { RESULTS } from "./common";

/**
 * `npm run bench`: every benchmark, one after the other (never in parallel: they share two
 * cores), then bench/results/README.md with all the tables.
 */
const parts = ["train", "allreduce", "scaling", "overhead", "pipeline", "ps"];
const extra = process.argv.slice(2);
let failed = false;
for (const part of parts) {
  process.stderr.write(`\n== bench: ${part} ==\n`);
  const r = spawnSync(process.execPath, [path.join(__dirname, part, "run.js"), ...extra], { stdio: "inherit" });
  if (r.status !== 0) failed = true;
}
spawnSync(process.execPath, [path.join(__dirname, "targets.js")], { stdio: "inherit" });
const sections = ["targets", ...parts]
  .map((p) => path.join(RESULTS, `${p}.md`))
  .filter((f) => fs.existsSync(f))
  .map((f) => fs.readFileSync(f, "utf8").trim());
fs.writeFileSync(
  path.join(RESULTS, "README.md"),
  `# Benchmark results\n\nMade by \`npm run bench${extra.length ? ` ${extra.join(" ")}` : ""}\` on ${new Date().toISOString().slice(0, 10)}. Every peer ran side by side in the same run; ratios, not absolute times, are what carry over to other machines.\n\n${sections.join("\n\n")}\n`,
);
process.stderr.write(`\nwrote ${path.join(RESULTS, "README.md")}\n`);
process.exit(failed ? 1 : 0);
