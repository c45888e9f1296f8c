import type { MessageOf, WorkerInfo } from "../protocol/messages";
import { VERSION } from "../protocol/sdk-version";
import type { BackendReport } from "../backends/select-backend";
import { calibrate, transferRate } from "./calibrate";
import { chooseTabBackend, TAB_BACKENDS, type TabBackend } from "./browser/backend-choice";
import { BackendError } from "../errors/errors";
import { tabName } from "./browser/tab-name";

/**
 * join-session.ts for a browser tab: the backend is the driver's choice where a tab can run it,
 * else the page's own (its link's ?backend=), else the best the browser offers.
 */
function choiceFor(asked: string): TabBackend | "auto" {
  if (asked !== "auto") {
    if ((TAB_BACKENDS as readonly string[]).includes(asked)) return asked as TabBackend;
    throw new BackendError(`the cluster asks for backend "${asked}", which a browser tab cannot run`, {
      hint: `a tab runs ${TAB_BACKENDS.join(", ")}: use .backend("auto") for clusters with tabs`,
    });
  }
  const own = new URLSearchParams(self.location.search).get("backend");
  return own !== null && (TAB_BACKENDS as readonly string[]).includes(own) ? (own as TabBackend) : "auto";
}

export async function joinWorker(msg: MessageOf<"join">): Promise<{ backend: BackendReport; info: WorkerInfo }> {
  const backend = await chooseTabBackend(choiceFor(msg.backend));
  const speed = await calibrate();
  return {
    backend,
    info: {
      pid: 0,
      hostname: tabName(),
      version: VERSION,
      node: "browser",
      backend: backend.backend,
      device: backend.device,
      ...(backend.gpu ? { gpu: { ...backend.gpu, transferBytesPerSecond: await transferRate() } } : {}),
      // 0: the browser does not say (the cap, if any, is what the tab may use).
      memoryBytes:
        msg.memoryCapBytes === undefined
          ? backend.memoryBytes
          : backend.memoryBytes === 0
            ? msg.memoryCapBytes
            : Math.min(msg.memoryCapBytes, backend.memoryBytes),
      cpus: navigator.hardwareConcurrency || 1,
      gflops: speed.gflops,
      kernelOverheadUs: speed.kernelOverheadUs,
      notes: backend.notes,
      dataPlane: { native: false, why: "a browser tab has WebSockets only" },
    },
  };
}
