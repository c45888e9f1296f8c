import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { cachedDigits } from "../../sdk/data/digit-cache";
import { readDigitFile } from "../../sdk/data/digit-file";
import { DataError } from "../../sdk/errors/errors";

const DIGITS = path.join(path.dirname(require.resolve("mnist/package.json")), "src", "digits");
/** Where the decoded copies are kept: this user's own directory under the temporary one. */
const COPIES = path.join(os.tmpdir(), `meshtrain-${process.getuid!()}`);

/** What JSON.parse and Float32Array.from make of a file: the reference every value must equal to the bit. */
function viaJson(file: string): Float32Array {
  return Float32Array.from((JSON.parse(fs.readFileSync(file, "utf8")) as { data: number[] }).data);
}

function sameBits(got: Float32Array, want: Float32Array, what: string): void {
  assert.equal(got.length, want.length, `${what}: ${got.length} values, JSON has ${want.length}`);
  const a = new Uint32Array(got.buffer, got.byteOffset, got.length);
  const b = new Uint32Array(want.buffer, want.byteOffset, want.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) assert.fail(`${what}: value ${i} is ${got[i]}, JSON.parse gives ${want[i]}`);
}

test("every mnist digit file reads to the bits JSON.parse gives", () => {
  for (let d = 0; d < 10; d++) {
    const file = path.join(DIGITS, `${d}.json`);
    sameBits(readDigitFile(file), viaJson(file), `${d}.json`);
  }
});

test("signs, spaces, integers, long fractions and exponents read as JSON reads them; a file without values is refused", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "digits-"));
  try {
    const cases = ["[]", "[0]", '{ "data": [ 1 , -0.5,0.1,\n0.333333333333333, 7, -0 ] }', "[0.1,2e-3,0.7]", "[0.12345678901234567890]", "[3.0e1, 1]"];
    cases.forEach((text, i) => {
      const file = path.join(dir, `${i}.json`);
      fs.writeFileSync(file, text.startsWith("[") ? `{ "data": ${text} }` : text);
      sameBits(readDigitFile(file), viaJson(file), text);
    });
    const bad = path.join(dir, "bad.json");
    fs.writeFileSync(bad, '{ "pixels": 3 }');
    assert.throws(() => readDigitFile(bad), (e: unknown) => e instanceof DataError && /no \[\.\.\.\] of pixel values/.test(e.message));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the decoded copy a later process reads holds the same bits; one that does not add up is decoded again and rewritten", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "digits-"));
  const before = new Set(fs.existsSync(COPIES) ? fs.readdirSync(COPIES) : []);
  try {
    for (let d = 0; d < 10; d++) fs.writeFileSync(path.join(dir, `${d}.json`), `{ "data": [${Array.from({ length: 5 + d }, (_, i) => (i * 0.137 + d) % 1).join(",")}] }`);
    let decoded = 0;
    const decode = (f: string): Float32Array => (decoded++, readDigitFile(f));
    const first = cachedDigits(dir, decode);
    assert.equal(decoded, 10);
    const second = cachedDigits(dir, decode);
    assert.equal(decoded, 10, "the second read came from the copy");
    first.forEach((d, i) => sameBits(second[i]!, d, `digit ${i} from the copy`));
    const made = fs.readdirSync(COPIES).filter((f) => !before.has(f));
    assert.equal(made.length, 1, `one copy made: ${made.join(", ")}`);
    const copy = path.join(COPIES, made[0]!);
    fs.truncateSync(copy, fs.statSync(copy).size - 4);
    cachedDigits(dir, decode);
    assert.equal(decoded, 20, "a short copy is not read");
    cachedDigits(dir, decode);
    assert.equal(decoded, 20, "and was rewritten whole");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    for (const f of fs.existsSync(COPIES) ? fs.readdirSync(COPIES) : []) if (!before.has(f)) fs.rmSync(path.join(COPIES, f), { force: true });
  }
});
