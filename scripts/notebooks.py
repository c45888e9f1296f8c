"""Executes tutorial notebooks headless and exports them to HTML, for `npm run test:notebooks`.

For each notebook: run every cell on the project's tslab kernel (kernelspec in jupyter/kernels)
with a per-cell timeout; a cell fails the notebook when it errs without a `raises-exception`
tag or comes back aborted (jupyter/run_cells.py); on failure print the failing cell's source and
its error; save the executed
notebook and its HTML export (template jupyter/nbconvert/templates/meshtrain, plotly.js inlined
once) in the output directory. Exit status 1 if any notebook failed.

usage: python3 scripts/notebooks.py --out DIR --plotly PATH [--timeout SECONDS] [--kernel NAME] NOTEBOOK...
"""
import argparse
import os
import sys
import time

import nbformat
from nbclient.exceptions import CellExecutionError, CellTimeoutError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "jupyter"))
from export_html import export  # noqa: E402
from run_cells import client as cell_client  # noqa: E402


def explain(index, cell, err):
    lines = []
    if cell is not None:
        lines.append(f"cell {index + 1} failed:")
        lines.append("---- source ----")
        lines.append(cell.source)
        lines.append("---- error ----")
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                lines.append(out.get("text", "").rstrip())
            if out.get("output_type") == "error":
                lines.append(f"{out.get('ename')}: {out.get('evalue')}")
                lines.extend(out.get("traceback", []))
    if isinstance(err, CellTimeoutError):
        lines.append(f"timed out: {err}")
    elif not lines:
        lines.append(str(err))
    return "\n".join(lines)


def slowest(took):
    """The cells that took longest (1-based, as Jupyter numbers them), where a notebook's time went."""
    top = sorted(took, reverse=True)[:3]
    return "slowest cells " + ", ".join(f"{i + 1} {t:.0f} s" for t, i in top) + f" of {len(took)} in {sum(t for t, _ in took):.0f} s"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--plotly", required=True)
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--kernel", default="meshtrain-tslab")
    p.add_argument("notebooks", nargs="+")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with open(a.plotly, encoding="utf8") as f:
        plotly_js = f.read()
    failed = 0
    for path in a.notebooks:
        name = os.path.splitext(os.path.basename(path))[0]
        nb = nbformat.read(path, as_version=4)
        client = cell_client(nb, path, a.kernel, a.timeout)
        start = time.time()
        # Cell by cell, so a failure is pinned to its cell.
        index, cell = None, None
        took = []
        try:
            with client.setup_kernel():
                kernel_s = time.time() - start
                for index, cell in enumerate(nb.cells):
                    t0 = time.time()
                    client.execute_cell(cell, index)
                    took.append((time.time() - t0, index))
            print(f"ok     {name} ({time.time() - start:.0f} s: kernel start {kernel_s:.0f} s, {slowest(took)})", flush=True)
        except (CellExecutionError, CellTimeoutError, RuntimeError) as err:
            failed += 1
            print(f"FAILED {name} ({time.time() - start:.0f} s)\n{explain(index, cell, err)}\n", flush=True)
        nbformat.write(nb, os.path.join(a.out, f"{name}.ipynb"))
        html = export(nb, plotly_js)
        with open(os.path.join(a.out, f"{name}.html"), "w", encoding="utf8") as f:
            f.write(html)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
