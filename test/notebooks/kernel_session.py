"""Drives a real tslab kernel (the project's kernelspec) the way Jupyter does, for kernel.test.ts.

Interrupts (jupyter_client's interrupt_kernel: SIGINT to the kernel's process group, as the
notebook's interrupt button does), restarts and shutdowns, with cells that launch a meshtrain
cluster and train on it. Prints one JSON object per line, {"phase": ..., ...}, for the test to
check; process checks (which worker pids are alive) are made here, between cells.

usage: python3 kernel_session.py CWD
"""
import json
import os
import sys
import time

from jupyter_client.manager import KernelManager

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "jupyter"))
from ipc_kernel import over_ipc  # noqa: E402

KERNEL = "meshtrain-tslab"


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2] not in "ZX"
    except (FileNotFoundError, ProcessLookupError):
        return False


def emit(phase, **fields):
    print(json.dumps({"phase": phase, **fields}), flush=True)


class Kernel:
    def __init__(self, cwd):
        self.km = over_ipc(KernelManager)(kernel_name=KERNEL)
        self.km.start_kernel(cwd=cwd)
        self.connect()

    def connect(self):
        if getattr(self, "kc", None) is not None:
            self.kc.stop_channels()
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, code, timeout=180, interrupts=(), after=None):
        """Executes a cell; `interrupts`: seconds at which to interrupt the kernel, counted from
        the request, or from when the cell printed `after`. On a swamped machine compiling a cell
        took more than the 4 s a fixed clock gave, so the interrupt came before the fit began."""
        msg_id = self.kc.execute(code)
        start = time.time()
        clock = start if after is None else None
        pending = sorted(interrupts)
        out = {"stdout": "", "stderr": "", "error": None}
        while True:
            if pending and clock is not None and time.time() - clock >= pending[0]:
                pending.pop(0)
                self.km.interrupt_kernel()
            if time.time() - start > timeout:
                raise RuntimeError(f"cell timed out after {timeout} s: {code[:200]}")
            try:
                msg = self.kc.get_iopub_msg(timeout=0.1)
            except Exception:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                out[content["name"]] += content["text"]
                if clock is None and after in out["stdout"]:
                    clock = time.time()
            elif kind == "error":
                out["error"] = f'{content.get("ename")}: {content.get("evalue")}'
            elif kind == "status" and content["execution_state"] == "idle":
                break
        while True:
            reply = self.kc.get_shell_msg(timeout=30)
            if reply["parent_header"].get("msg_id") == msg_id:
                out["status"] = reply["content"]["status"]
                break
        # Interrupts still due after the cell ended (a second one, while no cell runs).
        clock = clock if clock is not None else time.time()
        for t in pending:
            time.sleep(max(0, t - (time.time() - clock)))
            self.km.interrupt_kernel()
        if out["status"] != "ok":
            # As in every Jupyter kernel, a failed cell aborts the cells sent right after it
            # (tslab: for 200 ms); a person does not click that fast.
            time.sleep(0.5)
        return out

    def json(self, code, **kw):
        """Runs a cell whose last stdout line is JSON, and returns it with the cell's output."""
        out = self.run(code, **kw)
        lines = [l for l in out["stdout"].splitlines() if l.startswith("{")]
        if not lines:
            raise RuntimeError(f"no JSON from the cell: {out}")
        return json.loads(lines[-1]), out


SETUP = """
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, liveClusters } from "meshtrain";
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 50000, seed: 1 });
const small = datasets.synthetic({ inputShape: [6], classes: 3, size: 256, seed: 2 });
const model = tf.sequential({ layers: [tf.layers.dense({ units: 16, inputShape: [6], activation: "relu" }), tf.layers.dense({ units: 3, activation: "softmax" })] });
"""

LAUNCH = """
const c$N = await cluster().workers(2).strategy("data").launch();
console.log(JSON.stringify({ pids: c$N.workers.map((w) => w.info.pid), live: liveClusters().length }));
"""

LONG_FIT = """
globalThis.steps = 0;
const p$N = c$C.fit(model, ds, { epochs: 100, batchSize: 32, onStep: () => void (globalThis.steps++ === 0 && console.log("first step")) });
globalThis.outcome$N = p$N.then(() => ({ name: "resolved" }), (e) => ({ name: e.name, code: e.code, steps: e.run?.history.length, message: String(e.message).split("\\n")[0] }));
await p$N;
"""

AFTER = """
const o$N = await globalThis.outcome$N;
await new Promise((r) => setTimeout(r, 1500));
const s$N = globalThis.steps;
await new Promise((r) => setTimeout(r, 1500));
console.log(JSON.stringify({ outcome: o$N, state: c$C.state, stepsSeen: [s$N, globalThis.steps], live: liveClusters().length }));
"""


def code(template, n, c=1):
    return template.replace("$N", str(n)).replace("$C", str(c))


def main():
    cwd = sys.argv[1]
    k = Kernel(cwd)
    try:
        k.run(SETUP)
        launched, _ = k.json(code(LAUNCH, 1))
        pids = launched["pids"]
        emit("launched", **launched)
        # One interrupt per fit, three times: each stops the fit, the cluster and the kernel stay.
        for n in (1, 2, 3):
            cell = k.run(code(LONG_FIT, n), interrupts=(1,), after="first step")
            after, _ = k.json(code(AFTER, n))
            emit("interrupted", n=n, cell=cell, after=after, alive=[alive(p) for p in pids], kernel=k.km.is_alive())
        again, _ = k.json("const r = await c1.fit(model, small, { epochs: 1, batchSize: 32 });\nconsole.log(JSON.stringify({ steps: r.history.length, state: c1.state }));")
        emit("fit after interrupts", **again, alive=[alive(p) for p in pids])
        # Two interrupts within 2 s: the cluster is closed at once, the kernel stays.
        cell = k.run(code(LONG_FIT, 4), interrupts=(1, 1.6), after="first step")
        time.sleep(2)
        after, _ = k.json(code(AFTER, 4))
        emit("interrupted twice", cell=cell, after=after, alive=[alive(p) for p in pids], kernel=k.km.is_alive())
        # A restart, then a shutdown, each with a cluster running: no worker outlives its kernel.
        for how in ("restart", "shutdown"):
            k.run(SETUP)
            launched, _ = k.json(code(LAUNCH, 5))
            pids = launched["pids"]
            if how == "restart":
                k.km.restart_kernel(now=False)
                k.connect()
            else:
                k.km.shutdown_kernel(now=False)
            deadline = time.time() + 15
            while time.time() < deadline and any(alive(p) for p in pids):
                time.sleep(0.1)
            emit(how, alive=[alive(p) for p in pids], kernel=k.km.is_alive())
            if how == "restart":
                answer, _ = k.json('console.log(JSON.stringify({ two: 1 + 1 }));')
                emit("after restart", **answer)
    finally:
        if k.km.is_alive():
            k.km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
