"""Imported by the writer processes' forkserver only (``set_forkserver_preload``): SIGTERM is ignored.

A service manager stops a daemon by sending SIGTERM to every process of its group (systemd's
default ``KillMode=control-group``). The forkserver died of it at once, after which
``multiprocessing`` reads every child's exit code as 255, so each clean stop logged
``writer_process_exited`` at error level (breaker3). The forkserver needs no signal to end: it
exits when the daemon's end of its pipe closes. Its children inherit the ignored SIGTERM, and
the writer process ignores SIGINT too (``writerchild.main``): both stop through their parent.
Importing this module anywhere else would make that process deaf to SIGTERM; nothing else does.
"""

from __future__ import annotations

import signal

signal.signal(signal.SIGTERM, signal.SIG_IGN)
