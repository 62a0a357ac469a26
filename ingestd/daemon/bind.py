"""Binding the daemon's port: the first thing ``ingestd serve`` does, before any heavy import or database work.

A taken port (or a held lock, ``ingestd.daemon.lock``) is then reported in the time it takes Python to
start, whatever backfill, migration or backup would follow (not after a 287 MB backfill). Light on
purpose: the standard library, ``ingestd.errors`` and the settings table only.
"""

from __future__ import annotations

import socket

from ingestd.errors import DaemonError
from ingestd.settings import DEFAULTS

DEFAULT_PORT = DEFAULTS.get_int("port")
# A wildcard bind listens on every address; a client on this machine reaches it on loopback
# (``::`` on ::1: an IPv6 socket may be bound IPv6-only).
_WILDCARD_REACHED_ON = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


def reach_host(bound: str) -> str:
    """The address a client on this machine sends to a daemon bound to ``bound`` (the ``host``
    setting): loopback for a wildcard bind, else ``bound`` itself (``::1``, ``10.1.2.3``, a name).

    A daemon bound to one non-loopback address does not listen on 127.0.0.1 at all. Pure.
    """
    return _WILDCARD_REACHED_ON.get(bound, bound)


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind (not yet listen on) ``host:port``: the first thing ``serve`` does, so a taken port fails fast.

    Bound but not listening, the port is ours while the database is prepared; connections are
    refused (not queued) until the app listens, as when nothing was bound.

    Raises:
        DaemonError: the address cannot be resolved or bound (the port is taken, no permission).
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, addr = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as e:
        raise DaemonError(f"cannot listen on {host}:{port}: {e.strerror or e}; pass --host", port=port) from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
    except OSError as e:
        sock.close()
        raise DaemonError(
            f"cannot listen on {host}:{port}: {e.strerror or e}; is another program using that port? pass --port",
            port=port,
        ) from None
    sock.setblocking(False)
    return sock
