import type { Worker as NodeWorker } from "node:worker_threads";
import { isMeshtrainError } from "../../errors/errors";
import { ROLES } from "../../roles/role-table";
import type { CommConfig, CommToCompute } from "../bridge";
import { ComputeHost } from "../host";
import { joinDriver } from "../join-driver";
import { VERSION } from "../../protocol/sdk-version";
import type { Link } from "../../transport/link";
import { PageView } from "./page-view";

/**
 * The worker page a tab opens from the driver's invite link: the SDK's host and roles on the
 * page's thread (where TF.js runs), the communication thread in a Web Worker. The token comes
 * in the link's fragment, which the browser never sends to a server.
 */
const MAX_FRAME_BYTES = 256 * 1024 * 1024;

function tokenFromFragment(): string | null {
  const m = /(?:^#|&)token=([^&]+)/.exec(self.location.hash);
  return m ? decodeURIComponent(m[1]!) : null;
}

/** Joins the driver once the communication thread listens at `ownUrl`; the driver closing the lifeline ends the page. */
function joinTheDriver(
  view: PageView,
  comm: Worker,
  token: string,
  ownUrl: string,
  held: (lifeline: Link) => void,
): void {
  const joinUrl = `${self.location.protocol === "https:" ? "wss" : "ws"}://${self.location.host}/`;
  view.status("joining the driver");
  joinDriver({ url: joinUrl, claim: null, timeoutMs: 600_000 }, { token, ownUrl, maxFrameBytes: 64 * 1024 }).then(
    (joined) => {
      held(joined.lifeline);
      view.joined(joined.assigned.rank, joined.assigned.worldSize);
      joined.lifeline.setHandlers({
        text: () => undefined,
        binary: () => undefined,
        pong: () => undefined,
        close: (code, reason) => {
          comm.terminate();
          view.ended(
            code === 1000
              ? "the driver closed the cluster"
              : `the driver went away (code ${code}${reason ? `, ${reason}` : ""})`,
          );
        },
      });
    },
    (err: unknown) => {
      comm.terminate();
      view.failed(`could not join: ${isMeshtrainError(err) ? err.message : String(err)}`);
    },
  );
}

function start(view: PageView): void {
  const token = tokenFromFragment();
  if (!token) {
    view.failed("this link has no token: open the invite link the driver printed (it ends in #token=...)");
    return;
  }
  const comm = new Worker(new URL("comm.js", self.location.href).href);
  const config: CommConfig = {
    host: self.location.hostname,
    port: Number(self.location.port || (self.location.protocol === "https:" ? 443 : 80)),
    token,
    maxFrameBytes: MAX_FRAME_BYTES,
    maxConnections: 64,
    handshakeTimeoutMs: 10_000,
    exitWithDriver: true,
    version: VERSION,
  };
  comm.postMessage({ kind: "config", config });
  // A Web Worker takes postMessage(message, transfer) as a Node worker thread does: the host runs unchanged.
  const host = new ComputeHost(comm as unknown as NodeWorker, ROLES);
  let lifeline: Link | null = null;
  // Leaving closes every connection at once: the driver sees the tab go as it sees a closed tab go.
  view.onLeave(() => {
    comm.terminate();
    lifeline?.close(1000, "the tab left");
    view.left();
  });
  comm.onmessage = (e: MessageEvent) => {
    const m = e.data as CommToCompute;
    if (m.kind === "listening") {
      joinTheDriver(view, comm, token, m.url, (l) => (lifeline = l));
    } else if (m.kind === "exit") {
      comm.terminate();
      if (m.code === 0) view.ended(m.reason);
      else view.failed(m.reason);
      return;
    }
    view.observe(m);
    host.handle(m);
  };
}

start(new PageView(document));
