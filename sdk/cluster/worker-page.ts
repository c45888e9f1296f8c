import * as fs from "node:fs";
import type * as http from "node:http";
import * as path from "node:path";

/**
 * The worker page the driver serves on its join port for browser tabs: one HTML shell, the
 * bundles scripts/build-browser.js made from the SDK's worker code, and TF.js's wasm binaries.
 * The page may run its own scripts only (no inline code, nothing from elsewhere) and connect
 * over WebSockets; models reach it as topology JSON and weights, never as code.
 */
const BUILT = path.join(__dirname, "..", "worker", "browser");

/** Where the page's bundles are: a page built with the user's layers (MESHTRAIN_WORKER_PAGE), else the one npm run build made. */
function bundles(): string {
  return process.env.MESHTRAIN_WORKER_PAGE ? path.resolve(process.env.MESHTRAIN_WORKER_PAGE) : BUILT;
}

export const WORKER_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self'",
  "connect-src 'self' ws: wss:",
  "style-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>meshtrain worker</title><script src="page.js" defer></script></head><body></body></html>
`;

function wasmDir(): string | null {
  try {
    return path.dirname(require.resolve("@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm"));
  } catch {
    return null;
  }
}

/** What the page's paths serve: [file or inline text, content type]. */
function resolve(urlPath: string): { file?: string; text?: string; type: string } | null {
  if (urlPath === "/") return { text: HTML, type: "text/html; charset=utf-8" };
  if (urlPath === "/page.js" || urlPath === "/comm.js")
    return { file: path.join(bundles(), urlPath.slice(1)), type: "text/javascript; charset=utf-8" };
  const wasm = /^\/wasm\/(tfjs-backend-wasm(?:-simd|-threaded-simd)?\.wasm)$/.exec(urlPath);
  const dir = wasmDir();
  if (wasm && dir) return { file: path.join(dir, wasm[1]!), type: "application/wasm" };
  return null;
}

/** Whether the bundles were built (npm run build makes them). */
export function workerPageBuilt(): boolean {
  return fs.existsSync(path.join(bundles(), "page.js")) && fs.existsSync(path.join(bundles(), "comm.js"));
}

/** Answers one plain HTTP request on the join port. */
export function serveWorkerPage(req: http.IncomingMessage, res: http.ServerResponse): void {
  const headers = {
    "Content-Security-Policy": WORKER_PAGE_CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
  };
  const urlPath = new URL(req.url ?? "/", "http://x").pathname;
  const what = req.method === "GET" || req.method === "HEAD" ? resolve(urlPath) : null;
  if (!what) {
    res
      .writeHead(req.method === "GET" || req.method === "HEAD" ? 404 : 405, {
        ...headers,
        "Content-Type": "text/plain",
      })
      .end("not here\n");
    return;
  }
  let body: Buffer;
  try {
    body = what.file ? fs.readFileSync(what.file) : Buffer.from(what.text!, "utf8");
  } catch {
    res
      .writeHead(500, { ...headers, "Content-Type": "text/plain" })
      .end("the worker page was not built: run npm run build\n");
    return;
  }
  res.writeHead(200, { ...headers, "Content-Type": what.type, "Content-Length": body.length });
  res.end(req.method === "HEAD" ? undefined : body);
}
