"""Exports a notebook to one HTML file with meshtrain's placement diagrams (SVG) and Plotly figures drawn.

Plain `jupyter nbconvert --to html` drops both (Debian's nbconvert 6.5 strips SVG shapes, and
Plotly outputs need plotly.js). This uses the template beside this file, which writes SVG as it
is and inlines plotly.js once. Run by `meshtrain export`; scripts/notebooks.py uses export().

usage: python3 export_html.py NOTEBOOK --plotly PLOTLY_JS --out HTML [--execute --kernel NAME --timeout S --executed IPYNB]
With --execute the executed notebook is written too (--executed; `jupyter nbconvert --execute`
names it NAME.nbconvert.ipynb, and so does `meshtrain export`). Exit status 3 when a cell not tagged `raises-exception` failed or did not run (run_cells.py);
the page is written all the same.
"""
import argparse
import os
import sys

import nbformat
from nbconvert import HTMLExporter

HERE = os.path.dirname(os.path.abspath(__file__))


def export(nb, plotly_js):
    """The notebook node `nb` as HTML, plotly.js (its source text) inlined."""
    exporter = HTMLExporter(template_name="meshtrain", extra_template_basedirs=[os.path.join(HERE, "nbconvert", "templates")])
    html, _ = exporter.from_notebook_node(nb, resources={"meshtrain_plotly_js": plotly_js})
    return html


def main():
    p = argparse.ArgumentParser()
    p.add_argument("notebook")
    p.add_argument("--plotly", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--execute", action="store_true")
    p.add_argument("--kernel", default="meshtrain-tslab")
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--executed", help="where the executed notebook goes (with --execute)")
    a = p.parse_args()
    nb = nbformat.read(a.notebook, as_version=4)
    failed = None
    if a.execute:
        from nbclient.exceptions import CellExecutionError

        sys.path.insert(0, HERE)
        from run_cells import client

        try:
            client(nb, a.notebook, a.kernel, a.timeout).execute()
        except CellExecutionError as err:
            failed = err
        if a.executed:
            # Every output up to a failing cell, as the page shows them.
            nbformat.write(nb, a.executed)
            print(a.executed)
    with open(a.plotly, encoding="utf8") as f:
        plotly_js = f.read()
    with open(a.out, "w", encoding="utf8") as f:
        f.write(export(nb, plotly_js))
    print(a.out)
    if failed is not None:
        # The page still shows every output up to the failing cell, which shows its error.
        print(f"a cell failed (exported what ran to {a.out}):\n{failed}", file=sys.stderr)
        sys.exit(3)


if __name__ == "__main__":
    main()
