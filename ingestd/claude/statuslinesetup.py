"""``statusLine`` in Claude Code's ``settings.json``: ingestd's status line in, or out (SPEC §15).

Claude Code has one status line. ingestd's is ``{"type": "command", "command": "<python> -I -S
<.../ingestd/statusclient.py> --url http://<host>:<port>/statusline ...", "padding": 0}``
(``ingestd.statusclient``). A status line that is not ours (ccstatusline, ccusage, a script of the
user's) is never replaced silently: ``plan`` refuses, naming it, unless told to replace it, and
the file is then backed up first (``hooksetup.apply_plan``, as for the hooks). Ours is recognised
by its command running ``statusclient.py`` of an ingestd (``is_ours``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestd.claude import settingsjson
from ingestd.claude.hooksetup import Plan, check_env_name, parse_settings, uses_crlf
from ingestd.errors import InputError

KEY = "statusLine"
CLIENT = "statusclient.py"


@dataclass(frozen=True, slots=True)
class StatusTarget:
    """What ingestd's status line runs.

    Attributes:
        python: str, the interpreter (of the stable ingestd, ``paths.find_installed``).
        client: str, the path of that ingestd's ``statusclient.py``.
        url: str, the daemon's ``/statusline`` URL.
        token_env: str | None, the environment variable holding the token (the name only).
        fields: str | None, the fields shown (``report.statusline.FIELDS``; None: the default).
    """

    python: str
    client: str
    url: str
    token_env: str | None = None
    fields: str | None = None

    def __post_init__(self) -> None:
        if self.token_env is not None:
            check_env_name(self.token_env)


def command(t: StatusTarget) -> str:
    """The command line (the token's variable *name* only)."""
    parts = [t.python, "-I", "-S", t.client, "--url", t.url]
    if t.token_env:
        parts += ["--token-env", t.token_env]
    if t.fields:
        parts += ["--fields", t.fields]
    return " ".join(shlex.quote(p) for p in parts)


def ours(t: StatusTarget) -> dict[str, Any]:
    """The ``statusLine`` value ingestd installs."""
    return {"type": "command", "command": command(t), "padding": 0}


def is_ours(value: Any) -> bool:
    """A ``statusLine`` whose command runs an ingestd's ``statusclient.py``."""
    if not isinstance(value, dict) or not isinstance(value.get("command"), str):
        return False
    try:
        words = shlex.split(value["command"])
    except ValueError:
        return False
    return any(Path(w).name == CLIENT and Path(w).parent.name == "ingestd" for w in words)


def describe(value: Any) -> str:
    """A status line in a few words (its command when it has one)."""
    if isinstance(value, dict) and isinstance(value.get("command"), str):
        return repr(value["command"])
    return repr(value)


def plan(path: Path, old_text: str | None, action: str, target: StatusTarget | None, *, replace: bool = False) -> Plan:
    """Pure: the new content for ``action`` (``install``: ``target`` as the status line;
    ``uninstall``: ours removed, any other left alone).

    Raises:
        InputError: the file is not a usable settings object; or, installing without ``replace``,
            it has a status line that is not ours (the message names it and how to go on).
    """
    doc = parse_settings(old_text, path)
    current = doc.get(KEY)
    new = dict(doc)
    if action == "install":
        assert target is not None
        if current is not None and not is_ours(current) and not replace:
            raise InputError(
                f"{path} already has a status line ({describe(current)}); ingestd does not replace it"
                " silently: run `ingestd statusline install --replace` to put ingestd's in its place"
                " (the old file is kept as a backup beside it), or keep yours; nothing was changed",
                path=str(path),
            )
        new[KEY] = ours(target)
    elif is_ours(current):
        del new[KEY]
    if new == doc:
        return Plan(path, old_text, old_text if old_text is not None else settingsjson.render({}))
    crlf = uses_crlf(old_text)
    text = old_text.replace("\r\n", "\n") if old_text is not None and crlf else old_text
    out = settingsjson.render(new, settingsjson.detect_style(text))
    return Plan(path, old_text, out.replace("\n", "\r\n") if crlf else out)
