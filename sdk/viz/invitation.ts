import qrcode = require("qrcode-generator");
import { makeDisplayable } from "./displayable";
import { esc } from "./escape";

/** A browser tabs' invite link, shown as a link and a QR code in a notebook and as the URL elsewhere. */
export interface Invitation {
  readonly url: string;
}

/** The QR code of `text` as SVG (medium error correction, four modules of quiet zone). */
function qrSvg(text: string): string {
  const qr = qrcode(0, "M");
  qr.addData(text);
  qr.make();
  return qr.createSvgTag({ cellSize: 4, margin: 16 });
}

/**
 * What join({ browsers: true, onInvite }) hands a notebook: `onInvite: (url) => console.log(invitation(url))`
 * draws the link and its QR code (a phone's camera opens it). The link carries the cluster's
 * token in its fragment: whoever has it can join.
 */
export function invitation(url: string): Invitation {
  const inv = { url };
  Object.defineProperty(inv, "toString", { value: () => url, enumerable: false });
  return makeDisplayable(
    inv,
    () => ({
      "text/html": `<div><p>Open this link in a browser (a tab, a laptop's, a phone's) to join the cluster as a worker: <a href="${esc(url)}" target="_blank" rel="noopener">${esc(url)}</a></p>${qrSvg(url)}</div>`,
      "text/plain": url,
    }),
    () => url,
  );
}
