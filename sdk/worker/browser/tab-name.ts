/** This page's own name: two tabs are two machines as far as the driver can tell. */
const TAB_ID = Array.from(crypto.getRandomValues(new Uint8Array(2)), (b) => b.toString(16).padStart(2, "0")).join("");

/** "tab 3fa1: Chrome 150 on Linux": what a tab calls itself where a process gives its host name. */
export function tabName(): string {
  const ua = navigator.userAgent;
  const browser = /Edg\/(\d+)/.exec(ua)
    ? `Edge ${/Edg\/(\d+)/.exec(ua)![1]}`
    : /Firefox\/(\d+)/.exec(ua)
      ? `Firefox ${/Firefox\/(\d+)/.exec(ua)![1]}`
      : /Chrom(?:e|ium)\/(\d+)/.exec(ua)
        ? `Chrome ${/Chrom(?:e|ium)\/(\d+)/.exec(ua)![1]}`
        : /Safari\//.test(ua)
          ? "Safari"
          : "a browser";
  const os = /Android/.test(ua)
    ? "Android"
    : /iPhone|iPad/.test(ua)
      ? "iOS"
      : /Mac OS X/.test(ua)
        ? "macOS"
        : /Windows/.test(ua)
          ? "Windows"
          : /Linux/.test(ua)
            ? "Linux"
            : "";
  return `tab ${TAB_ID}: ${browser}${os ? ` on ${os}` : ""}`;
}
