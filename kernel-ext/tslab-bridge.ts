import { randomBytes } from "node:crypto";
import type { MimeBundle } from "../sdk/viz/displayable";

/**
 * The one file that talks to tslab. tslab's public API (display.raw) sends one MIME type per
 * message, but a figure needs several in one message: Plotly's JSON for renderers that have
 * Plotly, and a static drawing for those that do not. tslab's kernel writes every display
 * through one function it keeps in its jupyter module (`lastWriteDisplayData`, set for each
 * executing cell); we hand it the whole bundle. If that function is not there (another tslab
 * version), we fall back to the public API with the single best type: the drawing still shows,
 * only interactivity is lost.
 */

interface JupyterModule {
  lastWriteDisplayData?: (
    content: { data: MimeBundle; metadata: object; transient: { display_id?: string } },
    update: boolean,
  ) => void;
}
interface PublicModule {
  display: { raw(contentType: string, data: string): void };
}

/** The modules of the tslab that runs this kernel, found among those already loaded. */
function loaded<T>(suffix: string): T | undefined {
  for (const [file, mod] of Object.entries(require.cache)) {
    if (mod && file.replace(/\\/g, "/").endsWith(suffix)) return mod.exports as T;
  }
  return undefined;
}

/** True inside a tslab kernel that is executing a cell. */
export function inKernel(): boolean {
  return typeof loaded<JupyterModule>("tslab/dist/jupyter.js")?.lastWriteDisplayData === "function";
}

const FALLBACK_ORDER = ["text/html", "image/svg+xml", "image/png", "text/markdown", "text/plain"];

/** Displays `bundle`; with `displayId`, later calls with `update: true` replace that output in place. */
export function sendBundle(bundle: MimeBundle, options: { displayId?: string; update?: boolean } = {}): void {
  const jupyter = loaded<JupyterModule>("tslab/dist/jupyter.js");
  if (typeof jupyter?.lastWriteDisplayData === "function") {
    jupyter.lastWriteDisplayData(
      { data: bundle, metadata: {}, transient: options.displayId ? { display_id: options.displayId } : {} },
      Boolean(options.update),
    );
    return;
  }
  const pub = loaded<PublicModule>("tslab/dist/public.js");
  const type = FALLBACK_ORDER.find((t) => typeof bundle[t] === "string");
  if (pub && type) pub.display.raw(type, bundle[type] as string);
  else process.stdout.write(`${String(bundle["text/plain"] ?? "")}\n`);
}

export function newDisplayId(): string {
  return randomBytes(8).toString("hex");
}
