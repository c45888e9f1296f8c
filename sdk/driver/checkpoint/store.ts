import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { z } from "zod";
import { CheckpointError } from "../../errors/errors";
import { checkParts, ShardsSchema, type Shards } from "./parts";

/**
 * Checkpoints on disk. Each is a directory `step-000012` (12 steps done) holding meta.json and
 * two binary files (and a sharded fit's parts, see parts.ts), written under a temporary name and renamed into place, then named in
 * `latest` (also written and renamed): a crash at any moment leaves the previous checkpoint
 * whole and `latest` naming it. Every file's SHA-256 is in meta.json, and meta.json carries
 * the SHA-256 of its own body, so a partial or corrupt checkpoint is refused, naming the file.
 */

const TensorMetaSchema = z.strictObject({ name: z.string(), shape: z.array(z.number().int().nonnegative()) });

export const CheckpointBodySchema = z.strictObject({
  format: z.literal(1),
  /** The strategy whose plan wrote it (a plan's `strategy`). */
  strategy: z.string().min(1).max(64),
  /** Steps completed: training resumes with this step. */
  step: z.number().int().nonnegative(),
  seed: z.number().int(),
  shuffle: z.boolean(),
  batchSize: z.number().int().positive(),
  datasetSize: z.number().int().nonnegative(),
  datasetName: z.string(),
  loss: z.string(),
  optimizer: z.record(z.string(), z.unknown()),
  /** What the model is made of (layer kinds, parameters, output shapes): resuming another model is refused. */
  modelKey: z.string(),
  weights: z.array(TensorMetaSchema),
  /** Each holder's optimizer state ("replica", "stage 1", "server 0"), its tensors in optimizer.bin in this order. */
  optimizerStates: z.array(
    z.strictObject({
      holder: z.string(),
      format: z.enum(["native", "tfjs"]),
      scalars: z.record(z.string(), z.number()),
      tensors: z.array(TensorMetaSchema),
    }),
  ),
  /** A sharded fit's optimizer state: a file per replica, each its slots over its ranges of the flat parameters. */
  shards: ShardsSchema.optional(),
  sha256: z.strictObject({ weights: z.string(), optimizer: z.string() }),
  writtenAt: z.string(),
});
export type CheckpointBody = z.infer<typeof CheckpointBodySchema>;

export interface Checkpoint {
  /** The checkpoint's directory. */
  path: string;
  body: CheckpointBody;
  weights: Float32Array[];
  optimizer: Float32Array[];
}

/** Writes one replica's part of a sharded checkpoint (its slots, in order) and returns its file's name and SHA-256. */
export type PartWriter = (index: number, slots: readonly Float32Array[]) => { file: string; sha256: string };

const sha = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");
const stepDir = (step: number): string => `step-${String(step).padStart(6, "0")}`;
const count = (shape: readonly number[]): number => shape.reduce((a, d) => a * d, 1);

function concat(arrays: readonly Float32Array[]): Buffer {
  const out = Buffer.allocUnsafe(arrays.reduce((a, x) => a + x.byteLength, 0));
  let off = 0;
  for (const a of arrays) {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), off);
    off += a.byteLength;
  }
  return out;
}

function split(buf: Buffer, shapes: ReadonlyArray<readonly number[]>, file: string): Float32Array[] {
  const want = shapes.reduce((a, s) => a + count(s) * 4, 0);
  if (buf.length !== want)
    throw new CheckpointError(`${file} has ${buf.length} bytes; its checkpoint describes ${want}`, {
      details: { file },
    });
  const out: Float32Array[] = [];
  let off = 0;
  for (const s of shapes) {
    const n = count(s);
    out.push(new Float32Array(buf.buffer.slice(buf.byteOffset + off, buf.byteOffset + off + n * 4)));
    off += n * 4;
  }
  return out;
}

function writeDurably(file: string, data: string | Buffer): void {
  const fd = fs.openSync(file, "w");
  try {
    fs.writeSync(fd, typeof data === "string" ? Buffer.from(data) : data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Writes a checkpoint; keeps the previous one, removes older ones. Returns its directory. A
 * sharded fit's `parts` writes each replica's part as it arrives, so no one process ever holds
 * the whole optimizer state.
 */
export async function writeCheckpoint(
  dir: string,
  body: Omit<CheckpointBody, "sha256" | "writtenAt" | "format" | "shards">,
  weights: readonly Float32Array[],
  optimizer: readonly Float32Array[],
  parts?: (put: PartWriter) => Promise<Shards>,
): Promise<string> {
  fs.mkdirSync(dir, { recursive: true });
  const name = stepDir(body.step);
  const tmp = path.join(dir, `.tmp-${name}-${process.pid}`);
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp);
  const w = concat(weights);
  const o = concat(optimizer);
  writeDurably(path.join(tmp, "weights.bin"), w);
  writeDurably(path.join(tmp, "optimizer.bin"), o);
  const put: PartWriter = (index, slots) => {
    const data = concat(slots);
    const file = `optimizer-${index}.bin`;
    writeDurably(path.join(tmp, file), data);
    return { file, sha256: sha(data) };
  };
  const shards = parts ? { shards: await parts(put) } : {};
  // Parsed as it will be read back: the checksum is of the fields in the schema's order.
  const full = CheckpointBodySchema.parse({
    format: 1,
    ...body,
    ...shards,
    sha256: { weights: sha(w), optimizer: sha(o) },
    writtenAt: new Date().toISOString(),
  });
  const text = JSON.stringify(full);
  writeDurably(path.join(tmp, "meta.json"), JSON.stringify({ body: full, sha256: sha(Buffer.from(text)) }, null, 1));
  const final = path.join(dir, name);
  fs.rmSync(final, { recursive: true, force: true });
  fs.renameSync(tmp, final);
  const latestTmp = path.join(dir, `.latest-${process.pid}`);
  writeDurably(latestTmp, `${name}\n`);
  fs.renameSync(latestTmp, path.join(dir, "latest"));
  // Keep this one and the one before it; older ones and leftovers of crashed writes go.
  const steps = fs
    .readdirSync(dir)
    .filter((f) => /^step-\d+$/.test(f))
    .sort();
  for (const old of steps.slice(0, Math.max(0, steps.length - 2)))
    fs.rmSync(path.join(dir, old), { recursive: true, force: true });
  for (const f of fs.readdirSync(dir))
    if (f.startsWith(".tmp-") && f !== path.basename(tmp))
      fs.rmSync(path.join(dir, f), { recursive: true, force: true });
  return final;
}

/** Reads and checks one checkpoint directory. */
export function readCheckpointAt(ckpt: string): Checkpoint {
  const metaFile = path.join(ckpt, "meta.json");
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(metaFile, "utf8"));
  } catch (err) {
    throw new CheckpointError(
      `cannot read ${metaFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      { details: { file: metaFile } },
    );
  }
  const envelope = z.strictObject({ body: z.unknown(), sha256: z.string() }).safeParse(parsed);
  const body = envelope.success ? CheckpointBodySchema.safeParse(envelope.data.body) : undefined;
  if (!envelope.success || !body?.success || sha(Buffer.from(JSON.stringify(body.data))) !== envelope.data.sha256) {
    throw new CheckpointError(`${metaFile} is corrupt: its checksum or its fields do not match`, {
      details: { file: metaFile },
    });
  }
  const b = body.data;
  const bin = (name: "weights" | "optimizer"): Buffer => {
    const file = path.join(ckpt, `${name}.bin`);
    let data: Buffer;
    try {
      data = fs.readFileSync(file);
    } catch (err) {
      throw new CheckpointError(
        `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        { details: { file } },
      );
    }
    if (sha(data) !== b.sha256[name])
      throw new CheckpointError(`${file} is corrupt: its SHA-256 differs from the one recorded when it was written`, {
        details: { file },
      });
    return data;
  };
  if (b.shards) checkParts(ckpt, b.shards);
  return {
    path: ckpt,
    body: b,
    weights: split(
      bin("weights"),
      b.weights.map((w) => w.shape),
      path.join(ckpt, "weights.bin"),
    ),
    optimizer: split(
      bin("optimizer"),
      b.optimizerStates.flatMap((h) => h.tensors.map((t) => t.shape)),
      path.join(ckpt, "optimizer.bin"),
    ),
  };
}

/**
 * The checkpoint to resume from: `from` itself when it is a checkpoint directory, else the one
 * its `latest` names (or its newest). A bad checkpoint is refused, naming the file and any
 * older checkpoint that is whole.
 */
export function readCheckpoint(from: string): Checkpoint {
  if (fs.existsSync(path.join(from, "meta.json"))) return readCheckpointAt(from);
  if (!fs.existsSync(from))
    throw new CheckpointError(`no checkpoint at ${from}: the directory does not exist`, {
      details: { file: from },
      hint: "pass the directory given as checkpoint.dir",
    });
  const steps = fs
    .readdirSync(from)
    .filter((f) => /^step-\d+$/.test(f))
    .sort();
  const latestFile = path.join(from, "latest");
  const named = fs.existsSync(latestFile) ? fs.readFileSync(latestFile, "utf8").trim() : steps[steps.length - 1];
  if (!named)
    throw new CheckpointError(`no checkpoint in ${from}`, {
      details: { file: from },
      hint: "a fit writes one every checkpoint.every steps",
    });
  try {
    return readCheckpointAt(path.join(from, named));
  } catch (err) {
    if (!(err instanceof CheckpointError)) throw err;
    const whole = steps
      .filter((s) => s < named)
      .reverse()
      .find((s) => {
        try {
          readCheckpointAt(path.join(from, s));
          return true;
        } catch {
          return false;
        }
      });
    throw new CheckpointError(err.summary, {
      details: err.details,
      hint: whole
        ? `the previous checkpoint is whole: fit with resumeFrom: "${path.join(from, whole)}"`
        : "no whole checkpoint is left here; train from the start",
    });
  }
}
