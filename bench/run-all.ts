import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { RESULTS } from "./common";

/**
 * `npm run bench`: every benchmark, one after the other (never in parallel: they share two
 * cores), then bench/results/README.md with all the tables (the targets first).
 * `npm run bench -- --only allreduce,scaling` re-runs some, and re-makes the README from every
 * part's latest results, saying which were re-run (`--only none`: re-makes the README alone).
 */
const parts = ["zoo", "train", "allreduce", "scaling", "compression", "overhead", "pipeline", "ps", "gpu", "network", "sharded", "relay", "faults"];
const onlyAt = process.argv.indexOf("--only");
const only = onlyAt >= 0 ? (process.argv[onlyAt + 1] ?? "").split(",").filter((p) => parts.includes(p)) : null;
const extra = process.argv.slice(2).filter((_, i) => onlyAt < 0 || (i !== onlyAt - 2 && i !== onlyAt - 1));
let failed = false;
for (const part of only ?? parts) {
  process.stderr.write(`\n== bench: ${part} ==\n`);
  const started = performance.now();
  const r = spawnSync(process.execPath, [path.join(__dirname, part, "run.js"), ...extra], { stdio: "inherit" });
  process.stderr.write(`== bench: ${part} ${r.status === 0 ? "done" : `FAILED (${r.status ?? r.signal})`} in ${((performance.now() - started) / 1000).toFixed(0)} s ==\n`);
  if (r.status !== 0) failed = true;
}
spawnSync(process.execPath, [path.join(__dirname, "targets.js")], { stdio: "inherit" });
const sections = ["targets", ...parts]
  .map((p) => path.join(RESULTS, `${p}.md`))
  .filter((f) => fs.existsSync(f))
  .map((f) => fs.readFileSync(f, "utf8").trim());
fs.writeFileSync(
  path.join(RESULTS, "README.md"),
  `# Benchmark results\n\n${only?.length === 0 ? `Composed on ${new Date().toISOString().slice(0, 10)} by \`npm run bench -- --only none\` from each benchmark's latest results (bench/results/*.json); each table was made by its own command, shown under it.` : only ? `${only.join(", ")} re-made by \`npm run bench -- --only ${only.join(",")}\` on ${new Date().toISOString().slice(0, 10)}; the other tables are from the last full \`npm run bench\`.` : `Made by \`npm run bench${extra.length ? ` ${extra.join(" ")}` : ""}\` on ${new Date().toISOString().slice(0, 10)}.`} Every peer ran side by side in the same run; ratios, not absolute times, are what carry over to other machines.\n\n${sections.join("\n\n")}\n`,
);
process.stderr.write(`\nwrote ${path.join(RESULTS, "README.md")}\n`);
process.exit(failed ? 1 : 0);
