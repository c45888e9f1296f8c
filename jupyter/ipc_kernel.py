"""Kernel managers that reach the kernel over Jupyter's ipc transport (Unix sockets in a private folder).

Jupyter picks TCP ports for a kernel by binding and closing them, then starts the kernel; any
process that binds port 0 in between can be given one of them (the tests' workers do, all the
time), and then the kernel cannot bind it and dies before it answers: CI failed on it once. A
socket file in a folder of its own cannot be taken. Used by scripts/notebooks.py (through
run_cells.py) and the kernel tests' sessions.
"""
import atexit
import os
import shutil
import tempfile


def over_ipc(cls):
    """A subclass of `cls` (jupyter_client's KernelManager or AsyncKernelManager) whose kernels' sockets are files in a folder of their own, removed at exit.

    A class, not an instance: nbclient shuts down only a kernel whose manager it made itself
    (`kernel_manager_class`); one handed to it in `km` would outlive the run."""

    class IpcKernelManager(cls):
        def __init__(self, **kwargs):
            folder = tempfile.mkdtemp(prefix="meshtrain-kernel-")
            atexit.register(shutil.rmtree, folder, True)
            # An absolute path: the kernel runs in the notebook's folder, the client in its own.
            super().__init__(transport="ipc", ip=os.path.join(folder, "kernel"), **kwargs)

    return IpcKernelManager


def manager_class(cls, kernel_name):
    """`over_ipc(cls)` for meshtrain's kernel, `cls` (TCP) for any other: stock tslab binds an ipc
    socket at `ip:port`, a file no client looks for, so over ipc it would never answer."""
    return over_ipc(cls) if kernel_name == "meshtrain-tslab" else cls
