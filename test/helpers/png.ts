import { inflateSync } from "node:zlib";

/**
 * Decodes the PNGs a browser screenshot produces (8-bit RGB or RGBA, not interlaced) into
 * RGBA pixels: enough to tell a drawn picture from a blank one.
 */
export function decodePng(buf: Buffer): { width: number; height: number; rgba: Uint8Array } {
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error("not a PNG");
  let pos = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos);
    const type = buf.toString("ascii", pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8]!;
      const color = data[9]!;
      if (depth !== 8 || (color !== 2 && color !== 6) || data[12] !== 0) throw new Error(`unsupported PNG (depth ${depth}, color type ${color})`);
      channels = color === 6 ? 4 : 3;
    } else if (type === "IDAT") idat.push(data);
    else if (type === "IEND") break;
    pos += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = new Uint8Array(width * height * 4);
  const prev = new Uint8Array(stride);
  const cur = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? cur[i - channels]! : 0;
      const b = prev[i]!;
      const c = i >= channels ? prev[i - channels]! : 0;
      let v = line[i]!;
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      cur[i] = v & 0xff;
    }
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 4;
      out[o] = cur[x * channels]!;
      out[o + 1] = cur[x * channels + 1]!;
      out[o + 2] = cur[x * channels + 2]!;
      out[o + 3] = channels === 4 ? cur[x * channels + 3]! : 255;
    }
    prev.set(cur);
  }
  return { width, height, rgba: out };
}

/** Share of pixels that are not (near) white, and how many distinct colours appear. */
export function inkCoverage(png: Buffer): { ink: number; colours: number } {
  const { rgba } = decodePng(png);
  let ink = 0;
  const colours = new Set<number>();
  for (let i = 0; i < rgba.length; i += 4) {
    if (rgba[i]! < 235 || rgba[i + 1]! < 235 || rgba[i + 2]! < 235) ink++;
    colours.add((rgba[i]! >> 4) | ((rgba[i + 1]! >> 4) << 4) | ((rgba[i + 2]! >> 4) << 8));
  }
  return { ink: ink / (rgba.length / 4), colours: colours.size };
}
