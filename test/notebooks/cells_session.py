"""Drives meshtrain's kernel the way Jupyter front ends do, for cells.test.ts: what a cell shows
when it fails or is interrupted, whether the cells after a failure run, re-runs of a launch
cell, drawing without an import, and where a running fit's plot is shown. Prints one JSON object per line, {"phase": ..., ...}.

usage: python3 cells_session.py CWD
"""
import json
import sys
import time

from kernel_session import Kernel, alive, emit


_early = {}


def collect(k, msg_id, timeout=120):
    """Every iopub message of one request until idle, then its reply. Messages of other
    requests read on the way are kept for them (two cells sent at once interleave)."""
    out = {"stdout": "", "stderr": "", "errors": [], "displays": [], "shown": []}
    pending = _early.pop(msg_id, [])
    start = time.time()
    while True:
        if pending:
            msg = pending.pop(0)
        else:
            if time.time() - start > timeout:
                raise RuntimeError(f"request {msg_id} did not finish in {timeout} s")
            try:
                msg = k.kc.get_iopub_msg(timeout=0.1)
            except Exception:
                continue
        parent = msg["parent_header"].get("msg_id")
        if parent != msg_id:
            _early.setdefault(parent, []).append(msg)
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out[content["name"]] += content["text"]
        elif kind == "error":
            out["errors"].append(content)
        elif kind in ("display_data", "update_display_data", "execute_result"):
            out["displays"].append(sorted(content["data"].keys()))
            out["shown"].append([kind, content.get("transient", {}).get("display_id")])
        elif kind == "status" and content["execution_state"] == "idle":
            break
    reply = _replies.pop(msg_id, None)
    while reply is None:
        msg = k.kc.get_shell_msg(timeout=30)
        parent = msg["parent_header"].get("msg_id")
        if parent == msg_id:
            reply = msg
        else:
            _replies[parent] = msg
    c = reply["content"]
    out["reply"] = {key: c.get(key) for key in ("status", "ename", "evalue", "traceback")}
    return out


_replies = {}


def pair(k, first, second, stop_on_error):
    """Sends two cells at once, as nbclient and "Run all" do, and returns both outcomes."""
    a = k.kc.execute(first, stop_on_error=stop_on_error)
    b = k.kc.execute(second, stop_on_error=stop_on_error)
    return collect(k, a), collect(k, b)


SETUP = """
import * as tf from "@tensorflow/tfjs";
import { cluster, datasets, liveClusters } from "meshtrain";
const ds = datasets.synthetic({ inputShape: [6], classes: 3, size: 50000, seed: 1 });
const model = tf.sequential({ layers: [tf.layers.dense({ units: 16, inputShape: [6], activation: "relu" }), tf.layers.dense({ units: 3, activation: "softmax" })] });
"""

LAUNCH = """const c = await cluster().workers(2).launch($OPTIONS);
console.log(JSON.stringify({ pids: c.workers.map((w) => w.info.pid), live: liveClusters().length }));"""


def launch(k, options=""):
    out = collect(k, k.kc.execute(LAUNCH.replace("$OPTIONS", options)))
    lines = [l for l in out["stdout"].splitlines() if l.startswith("{")]
    if not lines:
        raise RuntimeError(f"the launch cell printed no JSON: {out}")
    return json.loads(lines[-1]), out


def main():
    k = Kernel(sys.argv[1])
    try:
        ok = collect(k, k.kc.execute(SETUP))
        if ok["reply"]["status"] != "ok":
            raise RuntimeError(f"setup failed: {ok}")
        # A failing cell and the one sent right after it.
        raised, after = pair(k, 'throw new Error("expected to fail");', 'console.log("the next cell ran");', stop_on_error=False)
        emit("after a failure, not stopping", raised=raised, after=after)
        time.sleep(0.5)
        raised, after = pair(k, 'throw new Error("expected to fail");', 'console.log("the next cell ran");', stop_on_error=True)
        emit("after a failure, stopping", raised=raised, after=after)
        time.sleep(0.5)
        # A plan as the cell's value draws itself: nothing imported from meshtrain/notebook.
        drawn = collect(k, k.kc.execute('cluster().workers(2).strategy("data").plan(model, { batchSize: 32 })'))
        emit("drawn without an import", cell=drawn)
        # A meshtrain error escaping a cell.
        failed = collect(k, k.kc.execute('await cluster().workers(2).strategy("pipeline", { stages: 5 }).launch();'))
        emit("meshtrain error", cell=failed)
        time.sleep(0.5)
        # A failure after its cell ended (a promise nobody awaited) reaches the cell that runs then.
        collect(k, k.kc.execute('import { ConfigError } from "meshtrain";\nsetTimeout(() => void Promise.reject(new ConfigError("late failure", { hint: "await the promises you start" })), 300);'))
        late = collect(k, k.kc.execute('await new Promise((r) => setTimeout(r, 1500));\nconsole.log("waited");'))
        emit("late failure", cell=late)
        # The same launch cell three times: only the last cluster's workers are left.
        runs = [launch(k) for _ in range(3)]
        pids = [r[0]["pids"] for r in runs]
        emit("re-run three times", live=[r[0]["live"] for r in runs], stderr=[r[1]["stderr"] for r in runs], alive=[[alive(p) for p in ps] for ps in pids])
        kept = [launch(k, "{ keep: true }") for _ in range(2)]
        named = launch(k, '{ name: "big" }')
        again = collect(k, k.kc.execute(LAUNCH.replace("$OPTIONS", '{ name: "big" }')))
        time.sleep(0.5)
        listed = collect(k, k.kc.execute('const all = liveClusters();\nconsole.log(JSON.stringify({ names: all.map((x) => x.name ?? null), first: String(all[0]).split("\\n")[0] }));\nfor (const x of all) await x.close();\nconsole.log(JSON.stringify({ live: liveClusters().length }));'))
        everyone = pids[2] + [p for r in kept for p in r[0]["pids"]] + named[0]["pids"]
        emit("kept and named", live=[r[0]["live"] for r in kept] + [named[0]["live"]], again=again, listed=listed, alive=[alive(p) for p in everyone])
        # An interrupt while a fit runs; the fit started in one cell is read in the next.
        launch(k)
        started = collect(k, k.kc.execute("const p = c.fit(model, ds, { epochs: 100, batchSize: 32 });"))
        time.sleep(2)
        # Another fit while that one runs: refused, and the running fit's plot stays under its own cell.
        second = collect(k, k.kc.execute('await c.fit(model, ds, { epochs: 1, batchSize: 32 }).catch((e) => console.log(e.name));'))
        emit("a second fit meanwhile", started=started, second=second)
        waited = k.kc.execute("const run = await p;")
        time.sleep(4)
        k.km.interrupt_kernel()
        interrupted = collect(k, waited)
        time.sleep(0.5)
        read = collect(k, k.kc.execute('const e = await p.catch((x) => x);\nconsole.log(JSON.stringify({ name: e.name, steps: e.run?.history.length }));\nawait c.close();'))
        emit("interrupted", cell=interrupted, read=read)
    finally:
        if k.km.is_alive():
            k.km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
