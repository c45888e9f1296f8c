/** A placement diagram's document: `width` x `height` on white, `body` its elements. */
export function placementDocument(width: number, height: number, body: readonly string[]): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif"><rect width="${width}" height="${height}" fill="white"/>${body.join("")}</svg>`;
}

/** An arrowhead for `marker-end="url(#id)"`, `size` units wide, in `color`. */
export function arrowMarker(id: string, color: string, size: number): string {
  return `<marker id="${id}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="${size}" markerHeight="${size}" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="${color}"/></marker>`;
}
