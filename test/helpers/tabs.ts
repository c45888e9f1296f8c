import { chromium, type Browser, type Page } from "playwright-core";
import { chromiumPath, ensureDebianPackages } from "./system-deps";

/**
 * Headless Chromium (Debian's, driven over the DevTools protocol by playwright-core, no browser
 * download) with WebGPU on its software adapter (SwiftShader): the flag makes requestAdapter()
 * answer at all in headless mode.
 */
export async function startBrowser(): Promise<Browser> {
  ensureDebianPackages("Chromium", ["chromium"], () => chromiumPath() !== null);
  return chromium.launch({
    executablePath: chromiumPath()!,
    args: ["--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
}

/** A tab opened at `url`; what it throws or logs as an error is kept for the test's messages. */
export async function openTab(browser: Browser, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())));
  await page.goto(url);
  return { page, errors };
}

/** The worker page's field `id` (status, rank, backend, steps), as the page shows it. */
export async function field(page: Page, id: "status" | "rank" | "backend" | "steps"): Promise<string> {
  return (await page.textContent(`#${id}`)) ?? "";
}

/** The invite link with the page's own backend choice (?backend=), the token's fragment kept. */
export function withBackend(invite: string, backend: "webgpu" | "webgl" | "wasm" | "cpu"): string {
  return invite.replace("/#", `/?backend=${backend}#`);
}
