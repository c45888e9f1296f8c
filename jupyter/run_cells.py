"""Runs every cell of a notebook on a kernel and fails on any cell that did not run as written.

nbclient alone reports a notebook as executed when a cell came back with status "abort" (a
kernel that drops requests arriving right after a failure: tslab did, for 200 ms), and then
the cell has no output and took no time. Here such a cell fails the run like an error does,
and gets an error output saying so (an exported page shows it). A cell tagged
`raises-exception` may fail; every other failing cell fails the run. Used by `meshtrain export
--execute` (export_html.py) and `npm run test:notebooks` (scripts/notebooks.py).
"""
import os

import nbclient
from ipc_kernel import manager_class
from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellExecutionError
from nbformat.v4 import new_output


class CellAborted(CellExecutionError):
    """A cell the kernel answered with status "abort": it never ran."""

    def __init__(self, index):
        self.index = index
        self.summary = f'cell {index + 1} did not run: the kernel answered its request with status "abort" (it dropped it after an earlier failure)'
        super().__init__(self.summary, "CellAborted", self.summary)

    def __str__(self):
        return self.summary


def _refuse_aborted(cell, cell_index, execute_reply):
    if execute_reply and execute_reply.get("content", {}).get("status") == "abort":
        err = CellAborted(cell_index)
        cell.setdefault("outputs", []).append(new_output("error", ename="CellAborted", evalue=err.summary, traceback=[err.summary]))
        raise err


def client(nb, notebook_path, kernel, timeout):
    """An nbclient NotebookClient for `nb` that raises CellExecutionError (CellAborted for an abort) on the first cell that did not run as written."""
    return nbclient.NotebookClient(
        nb,
        timeout=timeout,
        # Two test lanes and their workers share two cores: a kernel's start (tslab compiles its
        # prelude) has taken most of nbclient's default 60 s there.
        startup_timeout=180,
        kernel_name=kernel,
        kernel_manager_class=manager_class(AsyncKernelManager, kernel),
        resources={"metadata": {"path": os.path.dirname(os.path.abspath(notebook_path))}},
        on_cell_executed=_refuse_aborted,
    )
