import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { freePort } from "./processes";
import { ensureDebianPackages, PYTHON } from "./system-deps";

const ROOT = path.join(__dirname, "..", "..", "..");

export interface NotebookServer {
  /** http://127.0.0.1:PORT */
  base: string;
  token: string;
  /** The folder it serves. */
  dir: string;
  /** Shuts the server and its kernels down (their workers with them), then removes its folders. */
  stop(): Promise<void>;
}

export function needNotebookServer(): void {
  ensureDebianPackages(
    "Jupyter Notebook (the classic front end)",
    ["jupyter-notebook", "python3-notebook"],
    () => spawnSync(PYTHON, ["-c", "import notebook.notebookapp"], { stdio: "ignore" }).status === 0,
  );
}

/**
 * Debian's Jupyter Notebook server on loopback, serving `files` (name -> contents) from a new
 * folder, with meshtrain's kernelspec found as docs/notebooks.md registers it (JUPYTER_PATH).
 * Its settings and runtime files go to folders of its own, not the user's. Kernels reach it over
 * Jupyter's ipc transport: a TCP port it picks could be taken meanwhile by a test's worker
 * (jupyter/ipc_kernel.py says how that failed CI once).
 */
export async function startNotebookServer(files: Record<string, string>, timeoutMs = 60_000): Promise<NotebookServer> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "meshtrain-jupyter-"));
  const dir = path.join(home, "notebooks");
  fs.mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  const token = randomBytes(16).toString("hex");
  const args = [
    "-m", "notebook", "--no-browser", "--allow-root", "--ip=127.0.0.1", `--port=${await freePort()}`, "--port-retries=50", `--NotebookApp.token=${token}`,
    `--notebook-dir=${dir}`, "--KernelManager.transport=ipc", `--KernelManager.ip=${path.join(home, "kernel")}`,
  ];
  const child = spawn(PYTHON, args, {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      HOME: home,
      JUPYTER_PATH: path.join(ROOT, "jupyter"),
      JUPYTER_CONFIG_DIR: path.join(home, "config"),
      JUPYTER_DATA_DIR: path.join(home, "data"),
      JUPYTER_RUNTIME_DIR: path.join(home, "runtime"),
    },
  });
  let log = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // The port it bound: the one asked for, or (taken meanwhile) the next free one it tried.
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the Jupyter Notebook server did not say where it listens within ${timeoutMs} ms:\n${log}`)), timeoutMs);
    const read = (chunk: Buffer): void => {
      log += chunk.toString();
      const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the Jupyter Notebook server exited (${code}) before serving:\n${log}`));
    });
  });
  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    token,
    dir,
    async stop() {
      // The server's own shutdown: every kernel is shut down (a meshtrain kernel closes its clusters).
      await fetch(`${base}/api/shutdown`, { method: "POST", headers: { Authorization: `token ${token}` } }).catch(() => undefined);
      const killed = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(killed);
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}
