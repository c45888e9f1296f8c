/** Text for SVG and HTML, in content or in a quoted attribute. */
export function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** One HTML table row of `cells`, already markup (escape text with esc first); "th" for a header row. */
export function htmlRow(cells: ReadonlyArray<string | number>, tag: "td" | "th" = "td"): string {
  return `<tr>${cells.map((c) => `<${tag}>${c}</${tag}>`).join("")}</tr>`;
}
