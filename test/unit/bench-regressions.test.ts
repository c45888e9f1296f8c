import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { regressions, type Watch } from "../../bench/regressions";

const epyc = { cpu: "AMD EPYC", isa: "AVX-512", cores: 2, date: "2026-12-07T07:00:00.000Z" };
const watch: Watch = { key: (r) => `${String(r.ranks)} ranks`, measures: ["busbw"], include: (r) => r.peer === "meshtrain" };

function recorded(machine: object, rows: object[]): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "mt-bench-")), "allreduce.json");
  fs.writeFileSync(file, JSON.stringify({ machine, rows }));
  return file;
}

test("a measure more than 15% below the last run on the same kind of CPU is named, with both values", () => {
  const file = recorded(epyc, [{ peer: "meshtrain", ranks: 2, busbw: 2.2 }, { peer: "meshtrain", ranks: 4, busbw: 1.0 }]);
  const said = regressions(file, { machine: epyc, rows: [{ peer: "meshtrain", ranks: 2, busbw: 1.1 }, { peer: "meshtrain", ranks: 4, busbw: 0.9 }] }, watch);
  assert.equal(said.length, 1);
  assert.match(said[0]!, /Regressed.*2026-12-07.*AMD EPYC \(AVX-512\), 2 cores.*2 ranks: busbw 1\.10, was 2\.20 \(-50%\)/);
  assert.doesNotMatch(said[0]!, /4 ranks/);
});

test("within 15%, a peer's row, a new row and a first run say nothing", () => {
  const file = recorded(epyc, [{ peer: "meshtrain", ranks: 2, busbw: 2.2 }, { peer: "gloo", ranks: 2, busbw: 1.0 }]);
  const rows = [{ peer: "meshtrain", ranks: 2, busbw: 1.9 }, { peer: "gloo", ranks: 2, busbw: 0.1 }, { peer: "meshtrain", ranks: 8, busbw: 0.1 }];
  assert.deepEqual(regressions(file, { machine: epyc, rows }, watch), []);
  assert.deepEqual(regressions(path.join(os.tmpdir(), "no-such-result.json"), { machine: epyc, rows }, watch), []);
});

test("a run on another kind of CPU is not a yardstick, and the run says so", () => {
  const avx2 = { ...epyc, isa: "AVX2" };
  const file = recorded(avx2, [{ peer: "meshtrain", ranks: 2, busbw: 9 }]);
  const said = regressions(file, { machine: epyc, rows: [{ peer: "meshtrain", ranks: 2, busbw: 1 }] }, watch);
  assert.deepEqual(said, ["Not held against the last recorded run: it ran on AMD EPYC (AVX2), 2 cores, this one on AMD EPYC (AVX-512), 2 cores."]);
  const unnamed = recorded({ cpu: "AMD EPYC", cores: 2 }, [{ peer: "meshtrain", ranks: 2, busbw: 9 }]);
  assert.match(regressions(unnamed, { machine: epyc, rows: [{ peer: "meshtrain", ranks: 2, busbw: 1 }] }, watch)[0]!, /vector instructions not recorded/);
});
