import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const MAGIC = Buffer.from("MTDIGIT1");
const HEADER = MAGIC.length + 10 * 4;

/**
 * The ten digit files decoded once per user and machine: a float32 copy in a directory of the
 * user's own under the system's temporary one, named by the files' path, sizes and times. Every
 * later process (the driver, each worker that loads its own data, every notebook kernel) reads
 * it in one go instead of decoding 21 MB of text. A copy that is not the user's own, is writable
 * by others or does not add up is not read: the files are decoded again (and the copy rewritten).
 */
export function cachedDigits(dir: string, decode: (file: string) => Float32Array): Float32Array[] {
  const files = Array.from({ length: 10 }, (_, d) => path.join(dir, `${d}.json`));
  const key = createHash("sha256")
    .update(
      [
        dir,
        ...files.map((f) => {
          const s = fs.statSync(f);
          return `${s.size}:${s.mtimeMs}`;
        }),
      ].join("\n"),
    )
    .digest("hex")
    .slice(0, 20);
  const own = ownDirectory();
  const copy = own ? path.join(own, `mnist-${key}.f32`) : null;
  const kept = copy ? readCopy(copy) : null;
  if (kept) return kept;
  const digits = files.map(decode);
  if (copy) writeCopy(copy, digits);
  return digits;
}

/** `<tmp>/meshtrain-<uid>`, made 0700 if missing; null where it is not this user's alone. */
function ownDirectory(): string | null {
  const uid = typeof process.getuid === "function" ? process.getuid() : -1;
  if (uid < 0) return null;
  const dir = path.join(os.tmpdir(), `meshtrain-${uid}`);
  try {
    fs.mkdirSync(dir, { mode: 0o700, recursive: true });
    const s = fs.lstatSync(dir);
    return s.isDirectory() && s.uid === uid && (s.mode & 0o077) === 0 ? dir : null;
  } catch {
    return null;
  }
}

function readCopy(file: string): Float32Array[] | null {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch {
    return null;
  }
  if (bytes.length < HEADER || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  const lengths = Array.from({ length: 10 }, (_, d) => bytes.readUInt32LE(MAGIC.length + 4 * d));
  if (HEADER + 4 * lengths.reduce((a, b) => a + b, 0) !== bytes.length) return null;
  // Its own aligned buffer: readFileSync may hand back a view at any offset.
  const values = new Float32Array(bytes.length / 4 - HEADER / 4);
  new Uint8Array(values.buffer).set(bytes.subarray(HEADER));
  let at = 0;
  return lengths.map((n) => values.subarray(at, (at += n)));
}

/** Written under another name and renamed: a process reading meanwhile sees the whole copy or none. */
function writeCopy(file: string, digits: readonly Float32Array[]): void {
  const header = Buffer.alloc(HEADER);
  MAGIC.copy(header);
  digits.forEach((d, i) => header.writeUInt32LE(d.length, MAGIC.length + 4 * i));
  const partial = `${file}.${process.pid}.partial`;
  try {
    fs.writeFileSync(
      partial,
      Buffer.concat([header, ...digits.map((d) => Buffer.from(d.buffer, d.byteOffset, d.byteLength))]),
      { mode: 0o600 },
    );
    fs.renameSync(partial, file);
  } catch {
    // A copy that cannot be written costs the next process a decode, nothing more.
    fs.rmSync(partial, { force: true });
  }
}
