import type { Figure, Trace } from "./figure";
import { esc } from "./escape";

/**
 * A static SVG drawing of a figure: what shows where Plotly cannot run (classic Jupyter without
 * a Plotly renderer, GitHub's notebook viewer, an HTML export without scripts). It draws the
 * kinds of figures meshtrain makes: lines and markers (with a right-hand axis), vertical bars
 * (stacked or grouped) and horizontal bars with a base (timelines).
 */

const W = 640;
const M = { l: 64, r: 64, t: 36, b: 64 };

/** About `count` round tick values covering [lo, hi]. */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [0];
  if (hi === lo) hi = lo + 1;
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function fmtTick(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e6) return `${(v / 1e6).toFixed(a >= 1e7 ? 0 : 1)}M`;
  if (a >= 1e4) return `${(v / 1e3).toFixed(0)}k`;
  if (a >= 100 || v === Math.round(v)) return String(Math.round(v));
  return v.toFixed(a >= 1 ? 1 : 2);
}

type Scale = (v: number) => number;

function linear(domain: [number, number], range: [number, number]): Scale {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const k = d1 === d0 ? 0 : (r1 - r0) / (d1 - d0);
  return (v) => r0 + (v - d0) * k;
}

function color(t: Trace, i: number): string {
  const c = t.marker?.color ?? t.line?.color;
  return typeof c === "string" ? c : ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#B279A2"][i % 5]!;
}

type Box = { x0: number; x1: number; y0: number; y1: number };
const num = (a: Trace["x"]): number[] => (a as Array<number | string>).map(Number);

/** A Plotly figure drawn as a static SVG: horizontal bars (timelines), vertical bars, lines, legend, title. */
export function figureToSvg(fig: Figure): string {
  const H = fig.layout.height ?? 320;
  const inner = { x0: M.l, x1: W - M.r, y0: M.t, y1: H - M.b };
  const horizontal = fig.data.some((t) => t.type === "bar" && t.orientation === "h");
  const bars = fig.data.filter((t) => t.type === "bar");
  const lines = fig.data.filter((t) => t.type === "scatter");
  const parts = horizontal ? timelineBars(fig, bars, inner) : bars.length > 0 ? columnBars(fig, bars, inner) : [];
  if (lines.length > 0 && !horizontal) parts.push(...lineTraces(fig, lines, bars.length, inner));
  const legend = fig.data.filter((t) => t.name && t.showlegend !== false);
  const step = (W - M.l - M.r) / Math.max(1, legend.length);
  legend.forEach((t, i) => {
    const lx = M.l + step * i;
    parts.push(
      `<rect x="${lx}" y="${H - 22}" width="12" height="12" fill="${color(t, i)}"/><text x="${lx + 16}" y="${H - 12}" font-size="11">${esc(t.name!)}</text>`,
    );
  });
  const title = fig.layout.title?.text ? titleSvg(fig.layout.title.text) : "";
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif"><rect width="${W}" height="${H}" fill="white"/>${title}${parts.join("")}</svg>`;
}

/** About how wide a bold 14 px sans-serif character is: a title wider than the drawing is wrapped. */
const TITLE_CHAR_PX = 7.8;

/** The title in lines that fit the drawing's width (a live plot's says its rate, steps, workers and loss: 100 characters and more). */
function titleSvg(text: string): string {
  const perLine = Math.floor((W - 16) / TITLE_CHAR_PX);
  const lines: string[] = [];
  for (const word of text.split(" ")) {
    const last = lines[lines.length - 1];
    if (last !== undefined && last.length + 1 + word.length <= perLine) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  // Two lines fit above the plot (its top margin); the font shrinks for more.
  const size = lines.length <= 2 ? 14 : 11;
  const spans = lines.map((l, i) => `<tspan x="${W / 2}" dy="${i === 0 ? 0 : size + 2}">${esc(l)}</tspan>`).join("");
  return `<text x="${W / 2}" y="${lines.length === 1 ? 20 : 14}" text-anchor="middle" font-size="${size}" font-weight="bold">${spans}</text>`;
}

/** Timelines: categories down the side, time along the bottom. */
function timelineBars(fig: Figure, bars: Trace[], inner: Box): string[] {
  const parts: string[] = [];
  const cats = [...new Set(bars.flatMap((t) => t.y as string[]))];
  const starts = bars.flatMap((t) => t.base ?? []);
  const ends = bars.flatMap((t) => num(t.x).map((d, i) => (t.base?.[i] ?? 0) + d));
  // The window drawn: timeline({ from, to }) of a late window starts where its first span does, not at 0.
  const lo = starts.length > 0 ? Math.min(...starts) : 0;
  const hi = Math.max(1, ...ends);
  const x = linear([lo, hi], [inner.x0, inner.x1]);
  const band = (inner.y1 - inner.y0) / Math.max(1, cats.length);
  parts.push(...axisX(niceTicks(lo, hi), x, inner, fig.layout.xaxis?.title?.text));
  cats.forEach((c, i) =>
    parts.push(
      `<text x="${inner.x0 - 6}" y="${inner.y0 + band * (i + 0.5) + 4}" text-anchor="end" font-size="11">${esc(c)}</text>`,
    ),
  );
  bars.forEach((t, ti) => {
    const ys = t.y as string[];
    num(t.x).forEach((d, i) => {
      const b = t.base?.[i] ?? 0;
      const row = cats.indexOf(ys[i]!);
      const w = Math.max(0.5, x(b + d) - x(b));
      parts.push(
        `<rect x="${x(b).toFixed(1)}" y="${(inner.y0 + band * row + band * 0.15).toFixed(1)}" width="${w.toFixed(1)}" height="${(band * 0.7).toFixed(1)}" fill="${color(t, ti)}" stroke="white" stroke-width="0.5"/>`,
      );
      const label = t.text?.[i];
      // A label only where it fits: about 6 px per character at this size.
      if (label && w >= label.length * 6 + 2) {
        parts.push(
          `<text x="${(x(b) + w / 2).toFixed(1)}" y="${(inner.y0 + band * (row + 0.5) + 4).toFixed(1)}" text-anchor="middle" font-size="10" fill="white">${esc(label)}</text>`,
        );
      }
    });
  });
  return parts;
}

/** Vertical bars per category, side by side or stacked. */
function columnBars(fig: Figure, bars: Trace[], inner: Box): string[] {
  const parts: string[] = [];
  const cats = [...new Set(bars.flatMap((t) => (t.x as Array<string | number>).map(String)))];
  const stacked = fig.layout.barmode === "stack";
  const totals = cats.map((_, ci) =>
    stacked ? bars.reduce((a, t) => a + (num(t.y)[ci] ?? 0), 0) : Math.max(0, ...bars.map((t) => num(t.y)[ci] ?? 0)),
  );
  const hi = Math.max(1e-9, ...totals);
  const y = linear([0, hi * 1.05], [inner.y1, inner.y0]);
  const band = (inner.x1 - inner.x0) / Math.max(1, cats.length);
  parts.push(...axisY(niceTicks(0, hi * 1.05), y, inner, fig.layout.yaxis?.title?.text, "left"));
  cats.forEach((c, i) =>
    parts.push(
      `<text x="${inner.x0 + band * (i + 0.5)}" y="${inner.y1 + 16}" text-anchor="middle" font-size="11">${esc(c)}</text>`,
    ),
  );
  const acc = cats.map(() => 0);
  bars.forEach((t, ti) => {
    const vals = num(t.y);
    cats.forEach((_, ci) => {
      const v = vals[ci] ?? 0;
      const w = stacked ? band * 0.6 : (band * 0.8) / bars.length;
      const x0 = stacked ? inner.x0 + band * ci + band * 0.2 : inner.x0 + band * ci + band * 0.1 + w * ti;
      const base = stacked ? acc[ci]! : 0;
      parts.push(
        `<rect x="${x0.toFixed(1)}" y="${y(base + v).toFixed(1)}" width="${w.toFixed(1)}" height="${Math.max(0, y(base) - y(base + v)).toFixed(1)}" fill="${color(t, ti)}"/>`,
      );
      if (stacked) acc[ci]! += v;
    });
  });
  return parts;
}

/** Lines (and markers) against a left axis, and a right one for traces on "y2". */
function lineTraces(fig: Figure, lines: Trace[], colorOffset: number, inner: Box): string[] {
  const parts: string[] = [];
  const left = lines.filter((t) => t.yaxis !== "y2");
  const right = lines.filter((t) => t.yaxis === "y2");
  const xs = lines.flatMap((t) => num(t.x));
  const x = linear([Math.min(...xs), Math.max(...xs)], [inner.x0, inner.x1]);
  const range = (ts: Trace[]): [number, number] => {
    const ys = ts.flatMap((t) => num(t.y)).filter(Number.isFinite);
    return [Math.min(0, ...ys), Math.max(1e-9, ...ys) * 1.05];
  };
  const [l0, l1] = range(left);
  const yl = linear([l0, l1], [inner.y1, inner.y0]);
  parts.push(...axisY(niceTicks(l0, l1), yl, inner, fig.layout.yaxis?.title?.text, "left"));
  parts.push(...axisX(niceTicks(Math.min(...xs), Math.max(...xs)), x, inner, fig.layout.xaxis?.title?.text));
  let yr = yl;
  if (right.length > 0) {
    const [r0, r1] = range(right);
    yr = linear([r0, r1], [inner.y1, inner.y0]);
    parts.push(...axisY(niceTicks(r0, r1), yr, inner, fig.layout.yaxis2?.title?.text, "right"));
  }
  lines.forEach((t, ti) => {
    const ys = num(t.y);
    const sy = t.yaxis === "y2" ? yr : yl;
    const pts = num(t.x).map((v, i) => `${x(v).toFixed(1)},${sy(ys[i]!).toFixed(1)}`);
    const c = color(t, ti + colorOffset);
    const dash =
      t.line?.dash === "dash" ? ' stroke-dasharray="6 4"' : t.line?.dash === "dot" ? ' stroke-dasharray="2 3"' : "";
    if (t.mode !== "markers")
      parts.push(
        `<polyline points="${pts.join(" ")}" fill="none" stroke="${c}" stroke-width="${t.line?.width ?? 1.5}"${dash}/>`,
      );
    if (t.mode === "markers" || t.mode === "lines+markers") {
      for (const p of pts) {
        const [px, py] = p.split(",");
        parts.push(`<circle cx="${px}" cy="${py}" r="2.5" fill="${c}"/>`);
      }
    }
  });
  return parts;
}

function axisX(ticks: number[], x: Scale, inner: Box, label?: string): string[] {
  const out = [`<line x1="${inner.x0}" y1="${inner.y1}" x2="${inner.x1}" y2="${inner.y1}" stroke="#333"/>`];
  for (const t of ticks) {
    const px = x(t).toFixed(1);
    out.push(
      `<line x1="${px}" y1="${inner.y1}" x2="${px}" y2="${inner.y1 + 4}" stroke="#333"/><text x="${px}" y="${inner.y1 + 16}" text-anchor="middle" font-size="10">${fmtTick(t)}</text>`,
    );
  }
  if (label)
    out.push(
      `<text x="${(inner.x0 + inner.x1) / 2}" y="${inner.y1 + 32}" text-anchor="middle" font-size="11">${esc(label)}</text>`,
    );
  return out;
}

function axisY(ticks: number[], y: Scale, inner: Box, label: string | undefined, side: "left" | "right"): string[] {
  const ax = side === "left" ? inner.x0 : inner.x1;
  const dir = side === "left" ? -1 : 1;
  const out = [`<line x1="${ax}" y1="${inner.y0}" x2="${ax}" y2="${inner.y1}" stroke="#333"/>`];
  for (const t of ticks) {
    const py = y(t).toFixed(1);
    if (side === "left") out.push(`<line x1="${inner.x0}" y1="${py}" x2="${inner.x1}" y2="${py}" stroke="#eee"/>`);
    out.push(
      `<text x="${ax + dir * 6}" y="${Number(py) + 3}" text-anchor="${side === "left" ? "end" : "start"}" font-size="10">${fmtTick(t)}</text>`,
    );
  }
  if (label) {
    const lx = side === "left" ? 14 : W - 10;
    out.push(
      `<text transform="translate(${lx},${(inner.y0 + inner.y1) / 2}) rotate(-90)" text-anchor="middle" font-size="11">${esc(label)}</text>`,
    );
  }
  return out;
}
