/** collect-garbage.ts for a browser tab: a page cannot start a collection, and reports TF.js's count only (memory-watch.browser.ts). */
export async function collectGarbage(): Promise<void> {}

/** collect-garbage.ts's collectOnce for a browser tab: a page cannot start a collection. */
export function collectOnce(): void {}
