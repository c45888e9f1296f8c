import { machineName } from "../util/machine-name";
import { allowedCores } from "../util/cpu-set";
import * as os from "node:os";
import type { MessageOf, WorkerInfo } from "../protocol/messages";
import { nativeDataPlane } from "../collectives/native-plane";
import { VERSION } from "../protocol/sdk-version";
import { selectBackend, type BackendReport } from "../backends/select-backend";
import { calibrate, transferRate } from "./calibrate";
import { BACKEND_CHOICES, type BackendChoice } from "../protocol/backend-names";

/** Joining a session: start the backend the driver asked for and say what this worker runs on, measured. */
export async function joinWorker(msg: MessageOf<"join">): Promise<{ backend: BackendReport; info: WorkerInfo }> {
  // A worker started with --backend decides for itself when the driver leaves it to "auto".
  const own = process.env.MESHTRAIN_BACKEND;
  const choice =
    msg.backend === "auto" && own && (BACKEND_CHOICES as readonly string[]).includes(own)
      ? (own as BackendChoice)
      : msg.backend;
  const backend = await selectBackend(choice, msg.threads === 0 ? os.availableParallelism() : msg.threads);
  const cap = msg.memoryCapBytes ?? null;
  const speed = await calibrate();
  const cores = allowedCores();
  const plane = nativeDataPlane();
  return {
    backend,
    info: {
      pid: process.pid,
      hostname: machineName(),
      version: VERSION,
      node: process.version,
      backend: backend.backend,
      device: backend.device,
      ...(backend.gpu ? { gpu: { ...backend.gpu, transferBytesPerSecond: await transferRate() } } : {}),
      memoryBytes: cap === null ? backend.memoryBytes : Math.min(cap, backend.memoryBytes),
      cpus: os.availableParallelism(),
      ...(cores ? { cores } : {}),
      gflops: speed.gflops,
      kernelOverheadUs: speed.kernelOverheadUs,
      notes: backend.notes,
      dataPlane: plane.ok ? { native: true } : { native: false, why: plane.reason },
    },
  };
}
