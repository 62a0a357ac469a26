"""Which hooks in a Claude Code settings file are ingestd's: only those ``ingestd hooks install`` wrote.

``install`` replaces ours and ``uninstall`` removes them, so adopting a hook the user wrote by hand
(an http hook to the daemon's URL, say) would delete it later. Ours are marked where written:

- a command hook runs ``<python> -m ingestd.forward`` (``MARKER``), the forwarder ingestd ships;
- an http hook carries the header ``INSTALLED_BY`` (a header is a documented field of Claude Code's
  http hooks and the daemon ignores it; an unknown key in the hook could make Claude Code refuse
  the file). Its URL says nothing: the user's own hook can post to the same one.

Http hooks written before the header existed had one exact shape (``_unmarked``: url
``http://<loopback>:<port>/hooks``, timeout 5, and with a token ``Authorization: Bearer ${NAME}``
with ``allowedEnvVars: [NAME]``, nothing else). They are taken as ours only in a file that an
older install wrote: it has our forwarder (every install wrote one, for SessionStart) and no
marked http hook. A hook of the user's in exactly that shape in such a file cannot be told apart
from ours. Pure.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from ingestd.http.auth import LOOPBACK_HOSTS

MARKER = "ingestd.forward"
INSTALLED_BY = ("X-Ingestd-Hook", "installed by ingestd hooks install")
_UNMARKED_TIMEOUT_S = 5  # the timeout every unmarked install wrote (hooksetup.HTTP_TIMEOUT_S)


def is_forwarder(hook: Any) -> bool:
    """A command hook whose command runs ``<python> -m ingestd.forward ...``."""
    if not isinstance(hook, dict) or hook.get("type") != "command" or not isinstance(hook.get("command"), str):
        return False
    try:
        argv = shlex.split(hook["command"])
    except ValueError:
        return False
    return argv[1:3] == ["-m", MARKER]


def is_marked(hook: Any) -> bool:
    """An http hook carrying ingestd's ``INSTALLED_BY`` header."""
    if not isinstance(hook, dict) or hook.get("type") != "http":
        return False
    headers = hook.get("headers")
    return isinstance(headers, dict) and headers.get(INSTALLED_BY[0]) == INSTALLED_BY[1]


def is_ours(hook: Any) -> bool:
    """A hook ingestd wrote and marked (``is_forwarder`` or ``is_marked``)."""
    return is_forwarder(hook) or is_marked(hook)


def _unmarked(hook: Any) -> bool:
    """Exactly the http hook installs wrote before ``INSTALLED_BY`` (see the module docstring)."""
    if not isinstance(hook, dict) or hook.get("type") != "http" or hook.get("timeout") != _UNMARKED_TIMEOUT_S:
        return False
    url = hook.get("url")
    if not isinstance(url, str):
        return False
    u = urlsplit(url)
    if u.scheme != "http" or u.hostname not in LOOPBACK_HOSTS or u.path != "/hooks" or u.query or u.fragment:
        return False
    keys = set(hook) - {"type", "url", "timeout"}
    if not keys:
        return True
    names = hook.get("allowedEnvVars")
    if keys != {"headers", "allowedEnvVars"} or not isinstance(names, list) or len(names) != 1:
        return False
    return hook.get("headers") == {"Authorization": f"Bearer ${{{names[0]}}}"}


def _hooks_of(settings: dict[str, Any]) -> Iterator[Any]:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return
    for groups in hooks.values():
        for g in groups if isinstance(groups, list) else ():
            if isinstance(g, dict) and isinstance(g.get("hooks"), list):
                yield from g["hooks"]


def ours_in(settings: dict[str, Any]) -> Callable[[Any], bool]:
    """The test for ingestd's hooks in ``settings``: ``is_ours``, and in a file an older install
    wrote (our forwarder, no marked http hook) the unmarked http hooks it wrote too."""
    every = list(_hooks_of(settings))
    older = any(is_forwarder(h) for h in every) and not any(is_marked(h) for h in every)
    if not older:
        return is_ours
    return lambda hook: is_ours(hook) or _unmarked(hook)
