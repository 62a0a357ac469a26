"""The writer process dies with its daemon, even when it is stopped (SIGSTOP) and cannot notice.

A running writer notices its daemon's death by itself: its socket reaches end of file, it commits
what it had received and exits. A stopped one notices nothing, and a ``kill -9`` of ``serve`` left
it behind, holding the database's write connection, until something continued or killed it. Only
the kernel can act on a stopped process, and ``PR_SET_PDEATHSIG`` (Linux) makes it send a signal
when the *parent* exits; the writer's parent is ``multiprocessing``'s forkserver, not the daemon.
The forkserver exits when every holder of its "alive" pipe has gone ("no more client processes
left"): the daemon and, by inheritance, every process forked from it, the writer included. So the
writer, which never asks the forkserver for a process, closes its copy of that pipe, and the chain
is: the daemon dies, the forkserver sees end of file and exits, the kernel sends the writer
``DEATH_SIGNAL``.

That signal is SIGCONT: a stopped writer only needs to run to see its socket's end of file and
exit as a running one does, keeping (committed) the deliveries it had received; a running writer
ignores it. SIGKILL would end it as surely but would race the running writer's last commit, for
nothing: those deliveries were never acknowledged, but they are what the daemon had received.
Elsewhere (macOS) there is no such call: a stopped writer stays until it is continued.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from multiprocessing import forkserver

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
DEATH_SIGNAL = signal.SIGCONT


def die_with_daemon() -> bool:
    """Arrange for this forkserver child to be killed when the daemon that asked for it exits.

    Call first thing in the child. Side effects (Linux): ``prctl(PR_SET_PDEATHSIG, SIGCONT)``
    (``DEATH_SIGNAL``), exits at once (``os._exit(1)``) when the parent is already gone, and closes
    this process's copy of the forkserver's alive pipe (it never starts processes through it).

    Returns:
        bool, whether the kernel will wake this process when its parent exits (False: not Linux,
        or the call was refused; a stopped writer then stays until something continues it).
    """
    if not sys.platform.startswith("linux"):
        return False
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        armed = bool(libc.prctl(PR_SET_PDEATHSIG, int(DEATH_SIGNAL), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False
    if armed and os.getppid() != parent:
        os._exit(1)  # the forkserver (so the daemon) went before the call: nobody is left to serve
    _leave_forkserver()
    return armed


def _leave_forkserver() -> None:
    """Close this process's inherited end of the forkserver's alive pipe (see the module docstring)."""
    server = getattr(forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if isinstance(fd, int):
        with contextlib.suppress(OSError):
            os.close(fd)
        server._forkserver_alive_fd = None  # type: ignore[union-attr]
