"""``ingestd hooks install | uninstall | print``: wire Claude Code's settings to the daemon.

Claude Code reads hooks from ``~/.claude/settings.json`` (user) or ``<project>/.claude/settings.json``
(FORMATS.md §7.3). Which events are hooked is ``EVENT_TABLE`` (every event of Claude Code
``CLAUDE_CODE_VERSION``, with why it is installed or left out). Every installed event that accepts
``type: "http"`` gets an http hook posting to ``http://<host>:<port>/hooks`` (the address ``serve``
listens on); SessionStart and Setup accept only command hooks, and Claude Code older than 2.1.63 has
no http hooks at all (``legacy``), so those get a command forwarder:
``<python> -m ingestd.forward`` (stdin to the endpoint, output discarded, 2 s bound, exit 0
whatever happens, the token read from the environment, never on the command line).

The merge is non-destructive: the user's own hooks and every other key stay as they are; our
entries are recognised by the marks ingestd writes (``is_ours``: an http hook carrying the
``X-Ingestd-Hook`` header, a command running ``ingestd.forward``; never by URL alone, which the user's
own hook may share) so installing twice changes nothing and ``uninstall`` removes only ours.
Before a write the old file is copied to ``settings.json.bak-<UTC stamp>`` with the old file's
mode, and only the newest few copies are kept; a symlinked ``settings.json`` (a dotfiles
repository) is written through the link (``ingestd.claude.settingsjson``). An install is spliced into the
text (``settingsjson.splice_install``) and an uninstall cut out of it (``splice_uninstall``): every byte of
the user's own layout stays, the ``--dry-run`` diff shows only the lines that change, and install
then uninstall gives the file back byte for byte (an event list that was empty before install
too: ``KEPT_EMPTY``). When splicing cannot be done (an install that
replaces older hooks of ours, a text the splice would not reproduce), the document is re-rendered
in the file's detected layout (indent, colon spacing, final newline). An empty (or
whitespace-only) file counts as ``{}``, as Claude Code reads it. A file that is not valid JSON,
or whose ``hooks`` block is not the shape Claude Code expects (``{event: [{"matcher"?,
"hooks": [{...}, ...]}, ...]}``), is refused and left untouched: merging into a shape we do not
understand would either drop the user's data or write a file Claude Code rejects. The planning
functions are pure; ``apply_plan`` does the I/O.

Which hooks in a Claude Code settings file are ingestd's (``is_ours``, ``ours_in``, pure): only
those ``ingestd hooks install`` wrote. ``install`` replaces ours and ``uninstall`` removes them, so
adopting a hook the user wrote by hand (an http hook to the daemon's URL, say) would delete it
later. Ours are marked where written:

- a command hook runs ``<python> -m ingestd.forward`` (``MARKER``), the forwarder ingestd ships;
- an http hook carries the header ``INSTALLED_BY`` (a header is a documented field of Claude Code's
  http hooks and the daemon ignores it; an unknown key in the hook could make Claude Code refuse
  the file). Its URL says nothing: the user's own hook can post to the same one.

Http hooks written before the header existed had one exact shape (``_unmarked``: url
``http://<loopback>:<port>/hooks``, timeout 5, and with a token ``Authorization: Bearer ${NAME}``
with ``allowedEnvVars: [NAME]``, nothing else). They are taken as ours only in a file that an
older install wrote: it has our forwarder (every install wrote one, for SessionStart) and no
marked http hook. A hook of the user's in exactly that shape in such a file cannot be told apart
from ours.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
import shlex
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ingestd import files
from ingestd.claude import settingsjson
from ingestd.errors import ConfigError, InputError
from ingestd.files import MIB, read_capped
from ingestd.settings import LOOPBACK_HOSTS

# The hook events of Claude Code ``CLAUDE_CODE_VERSION`` (its bundle's event enum, in its order), what
# ingestd installs for each and why (docs/claude-code.md §1.1 has the facts, each marked how it was
# established; tests/realclaude checks them against the real binary, and
# tests/realclaude/test_ingestd_e2e.py that every installed event that fires reaches the log).
CLAUDE_CODE_VERSION = "2.1.332"
HTTP = "http"
COMMAND = "command"


@dataclass(frozen=True, slots=True)
class HookEventSpec:
    """One hook event Claude Code knows, and what ``hooks install`` does with it.

    Attributes:
        name: str, the ``hook_event_name``.
        takes_http: bool, Claude Code runs a ``type: "http"`` hook for it (every event but SessionStart
            and Setup, which skip one: "HTTP hooks are not supported for ..."). Every event takes
            ``command`` (and ``mcp_tool``) hooks.
        install: str | None, the handler ingestd installs (``HTTP``, ``COMMAND``), None: not installed.
        matcher: str | None, the matcher group's ``matcher`` (``"*"`` on tool events), None: no matcher.
        why: str, one line: what the event tells ingestd, or why it is left out.
    """

    name: str
    takes_http: bool
    install: str | None
    matcher: str | None
    why: str


def _e(name: str, why: str, *, http: bool = True, install: bool = True, matcher: str | None = None) -> HookEventSpec:
    how = (HTTP if http else COMMAND) if install else None
    return HookEventSpec(name, http, how, matcher, why)


# An observer installs an event only when an empty answer leaves Claude Code exactly as it is without
# the hook (only the round trip's latency added) and the answer is not on the user's display path.
EVENT_TABLE: tuple[HookEventSpec, ...] = (
    _e("PreToolUse", "a tool call starts (tool_use_id, tool_name, input; spawns)", matcher="*"),
    _e("PostToolUse", "a tool call completed; a spawn's result names its child agent", matcher="*"),
    _e("PostToolUseFailure", "a tool call failed, or was interrupted (is_interrupt)", matcher="*"),
    _e("PostToolBatch", "the calls of one model answer, after all of them resolved"),
    _e("Notification", "the main agent waits for the user (permission, idle, elicitation)"),
    _e("UserPromptSubmit", "a prompt (prompt_id) starts work; an async agent's <task-notification>"),
    _e("UserPromptExpansion", "a slash command or MCP prompt expanded: activity of the prompt"),
    _e("SessionStart", "a session starts, resumes, compacts or forks (source)", http=False),
    _e("SessionEnd", "the session ended (reason): every agent's end is decided"),
    _e("Stop", "the main agent answered and waits"),
    _e("StopFailure", "the turn ended on an API error (typed error): the session's error"),
    _e("SubagentStart", "a subagent runs (agent_id, agent_type)"),
    _e("SubagentStop", "a subagent stopped (a blocked stop fires it again: a second log row)"),
    _e("PreCompact", "a compaction starts (trigger)"),
    _e("PostCompact", "a compaction ended: its summary"),
    _e("PreModelSwitch", "a model switch is asked for (from, to, source)"),
    _e("PostModelSwitch", "the model switched: recorded on the session"),
    _e("PermissionRequest", "a permission was asked for (no tool_use_id): activity", matcher="*"),
    _e("PermissionDenied", "auto mode refused a call: the call is denied, with its reason", matcher="*"),
    _e("Setup", "claude --init-only / --maintenance ran", http=False),
    _e("TeammateIdle", "a teammate of an agent team went idle: an agent of kind teammate"),
    _e("TaskCreated", "a task was created (task id, subject, teammate): the tasks projection"),
    _e("TaskCompleted", "a task was completed: the tasks projection"),
    _e("Elicitation", "an MCP server asked the user for input: activity"),
    _e("ElicitationResult", "the user's answer to an elicitation: activity"),
    _e("ConfigChange", "a settings file changed during the session: activity"),
    _e(
        "WorktreeCreate",
        "left out: a WorktreeCreate hook replaces git's worktree creation, and an empty answer gives no path"
        " (claude --worktree fails: 'hook succeeded but returned no worktree path')",
        install=False,
    ),
    _e(
        "WorktreeRemove",
        "left out: it fires only for worktrees a WorktreeCreate hook made, and then replaces their removal"
        " (an empty answer counts as removed)",
        install=False,
    ),
    _e("InstructionsLoaded", "a CLAUDE.md or rules file was loaded (before the first prompt)"),
    _e("CwdChanged", "the working directory changed (old, new)"),
    _e("FileChanged", "a watched file changed (an observer adds no watch: no matcher)"),
    _e("DirectoryAdded", "a directory was added to the session (/add-dir, a repository root)"),
    _e(
        "MessageDisplay",
        "left out: it runs synchronously before every piece of assistant text is shown, so each"
        " message would wait on the daemon, and it tells nothing the transcript does not",
        install=False,
    ),
    _e("PreSkillShellCommand", "a skill's inline shell command runs: activity of the prompt"),
)
EVENTS_BY_NAME = {e.name: e for e in EVENT_TABLE}
# Installed with an http hook (the daemon's URL) and, where Claude Code takes no http hook, with
# the command forwarder; every other event is left out (``EVENT_TABLE`` says why).
HTTP_EVENTS = tuple(e.name for e in EVENT_TABLE if e.install == HTTP)
COMMAND_ONLY_EVENTS = tuple(e.name for e in EVENT_TABLE if e.install == COMMAND)
NOT_INSTALLED = tuple(e.name for e in EVENT_TABLE if e.install is None)
TOOL_MATCHER_EVENTS = frozenset(e.name for e in EVENT_TABLE if e.matcher == "*")


def event_table_lines() -> list[str]:
    """``EVENT_TABLE`` as text lines for the terminal: event, what is installed (or ``-``), why. Pure."""
    width = max(len(e.name) for e in EVENT_TABLE)
    out = [f"hook events of Claude Code {CLAUDE_CODE_VERSION}: installed as http, command (no http hook taken) or -"]
    for e in EVENT_TABLE:
        out.append(f"  {e.name:<{width}}  {e.install or '-':<7}  {e.why}")
    return out


HTTP_TIMEOUT_S = 5
MARKER = "ingestd.forward"
INSTALLED_BY = ("X-Ingestd-Hook", "installed by ingestd hooks install")
# On our hook in an event whose list the user's file had, empty, before install (``"PreToolUse":
# []``): an uninstall that takes our group out leaves that empty list, not no event at all, so the
# file comes back byte for byte. An http hook carries the header, a forwarder the flag (which
# ``ingestd.forward`` ignores).
KEPT_EMPTY = ("X-Ingestd-Kept", "an empty list before install")
KEPT_EMPTY_FLAG = "--kept-empty"
FORWARD_TIMEOUT_S = 2
SETTINGS_MAX_BYTES = 16 * MIB  # Claude Code's settings.json is kilobytes: a larger file is the wrong one
render = settingsjson.render  # the block `hooks print` shows, laid out as Claude Code writes it
# What Claude Code can interpolate as ``${NAME}`` in http hook headers (a POSIX shell name).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class HookTarget:
    """Where hooks go.

    Attributes:
        port: int, the daemon's port.
        token_env: str | None, the environment variable holding the token (the name, never the value).
        legacy: bool, Claude Code < 2.1.63: command forwarders for every event.
        python: str, interpreter that runs the forwarder (default: this one).
        host: str, the address the daemon is reached on (``127.0.0.1``, ``::1``, ``10.1.2.3``, a name:
            ``bind.reach_host`` of the address ``serve`` binds).
    """

    port: int
    token_env: str | None = None
    legacy: bool = False
    python: str = sys.executable
    host: str = "127.0.0.1"
    otel: bool = False

    def __post_init__(self) -> None:
        if self.token_env is not None:
            check_env_name(self.token_env)

    @property
    def url(self) -> str:
        return f"{self.base_url}/hooks"

    @property
    def base_url(self) -> str:
        """``http://<host>:<port>``: the daemon's root (OTLP exporters append ``/v1/logs`` ...)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


# ``hooks install --otel``: the ``env`` entries that make Claude Code export its own telemetry to the
# daemon's OTLP paths (docs/claude-code.md §4), and the entry that marks which of them ingestd wrote
# (its value lists their names): an uninstall removes exactly those, never a variable the user set.
OTEL_MARK = "INGESTD_OTEL_VARS"
# in the mark's list (never a variable name): the user's ``env`` was there, empty, before ours
KEPT_ENV = "!env"


def otel_env(t: HookTarget) -> dict[str, str]:
    """The ``env`` entries of ``--otel`` for ``t`` (the mark aside)."""
    return {
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "OTEL_LOGS_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": t.base_url,
    }


def _remove_our_env(out: dict[str, Any]) -> None:
    """Drop (in place) the ``env`` entries the mark names, and the mark; ``env`` left empty goes,
    unless the mark says the user's file had it empty before (``KEPT_ENV``)."""
    env = out.get("env")
    if not isinstance(env, dict) or not isinstance(env.get(OTEL_MARK), str):
        return
    names = env[OTEL_MARK].split(",")
    for name in names:
        env.pop(name, None)
    env.pop(OTEL_MARK, None)
    if not env and KEPT_ENV not in names:
        del out["env"]


def _add_otel_env(out: dict[str, Any], t: HookTarget) -> None:
    """Add (in place) the ``--otel`` entries: a variable the user set to the same value is left theirs
    (not listed in the mark); one set to another value is refused, nothing is changed."""
    was_empty = out.get("env") == {}
    env = out.setdefault("env", {})
    if not isinstance(env, dict):
        raise InputError("`env` in the settings file is not an object; nothing was changed")
    ours = []
    for name, value in otel_env(t).items():
        if name in env and env[name] != value:
            raise InputError(
                f"`env.{name}` is already {env[name]!r} in the settings file (your own telemetry setting): "
                f"--otel would set it to {value!r}; remove it or install without --otel; nothing was changed"
            )
        if name not in env:
            env[name] = value
            ours.append(name)
    if ours:
        env[OTEL_MARK] = ",".join([*ours, KEPT_ENV] if was_empty else ours)
    elif not env:
        del out["env"]


def check_env_name(name: str) -> str:
    """``name`` when it is a usable environment variable name (``[A-Za-z_][A-Za-z0-9_]*``).

    Raises:
        ConfigError: anything else (it would be written as ``Bearer ${BAD NAME}``, which
            Claude Code cannot expand, and the daemon would answer every hook 401).
    """
    if not ENV_NAME.fullmatch(name):
        raise ConfigError(
            f"--token-env {name!r} is not an environment variable name "
            "(letters, digits and _, not starting with a digit), e.g. INGESTD_TOKEN"
        )
    return name


def settings_path(project: Path | None, config_dir: Path) -> Path:
    """``<project>/.claude/settings.json``, else the user's: ``<config_dir>/settings.json``
    (``config_dir`` is Claude Code's config directory, ``paths.claude_config_dir``:
    ``$CLAUDE_CONFIG_DIR`` moves its user settings too)."""
    if project is not None:
        return project / ".claude" / "settings.json"
    return config_dir / "settings.json"


def forward_command(t: HookTarget) -> str:
    """The forwarder command line (the token's variable *name* only)."""
    parts = [t.python, "-m", MARKER, "--url", t.url, "--timeout-s", str(FORWARD_TIMEOUT_S)]
    if t.token_env:
        parts += ["--token-env", t.token_env]
    return " ".join(shlex.quote(p) for p in parts)


def _http_hook(t: HookTarget, mark: str) -> dict[str, Any]:
    headers = {INSTALLED_BY[0]: mark}  # who wrote it: ``INSTALLED_BY`` makes it ours in settings
    hook: dict[str, Any] = {"type": "http", "url": t.url, "timeout": HTTP_TIMEOUT_S, "headers": headers}
    if t.token_env:
        headers["Authorization"] = f"Bearer ${{{t.token_env}}}"
        hook["allowedEnvVars"] = [t.token_env]
    return hook


def _command_hook(command: str) -> dict[str, Any]:
    return {"type": "command", "command": command, "async": True, "timeout": HTTP_TIMEOUT_S}


def our_hooks(
    t: HookTarget, *, mark: str = INSTALLED_BY[1], command: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` block ingestd installs, event -> matcher groups. Pure.

    Args:
        mark: the ``X-Ingestd-Hook`` header's value on the http hooks (``INSTALLED_BY`` in
            settings; the plugin marks its own, ``ingestd.claude.pluginsetup``).
        command: the command hooks' command line (default: ``forward_command(t)``).
    """
    out: dict[str, list[dict[str, Any]]] = {}
    forwarder = _command_hook(command if command is not None else forward_command(t))
    for ev in (*COMMAND_ONLY_EVENTS, *HTTP_EVENTS):
        hook = dict(forwarder) if (t.legacy or ev in COMMAND_ONLY_EVENTS) else _http_hook(t, mark)
        matcher = EVENTS_BY_NAME[ev].matcher
        group: dict[str, Any] = {"matcher": matcher} if matcher is not None else {}
        group["hooks"] = [hook]
        out[ev] = [group]
    return out


def parse_settings(text: str | None, path: Path) -> dict[str, Any]:
    """The settings object (``{}`` for a missing, empty or whitespace-only file), read by
    ``settingsjson.loads`` (numbers keep their text).

    Raises:
        InputError: not valid JSON, text ``settingsjson.loads`` refuses (a duplicate key, ``NaN``, a
            lone surrogate escape), not an object, or the ``hooks`` block is not
            ``{event: [{"hooks": [{...}]}]}`` (the message names the first wrong place).
    """
    if text is None or not text.strip():
        return {}
    try:
        doc = settingsjson.loads(text)
    except settingsjson.SettingsText as e:
        raise InputError(f"{path}: {e}; fix it and run again; nothing was changed", path=str(path)) from None
    except json.JSONDecodeError as e:
        raise InputError(
            f"{path} is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}); "
            "fix it and run again; nothing was changed",
            path=str(path),
        ) from None
    except RecursionError:
        raise InputError(f"{path} is nested too deeply to be settings; nothing was changed", path=str(path)) from None
    if not isinstance(doc, dict):
        raise InputError(f"{path} is not a JSON object; nothing was changed", path=str(path))
    where = _hooks_shape_error(doc)
    if where is not None:
        raise InputError(
            f"{path}: {where}; fix it (or move it aside) and run again; nothing was changed", path=str(path)
        )
    return doc


def _hooks_shape_error(doc: dict[str, Any]) -> str | None:
    """The first place where ``doc["hooks"]`` is not the shape the merge walks, or None."""
    if "hooks" not in doc:
        return None
    hooks = doc["hooks"]
    if not isinstance(hooks, dict):
        return "`hooks` is not an object"
    for ev, groups in hooks.items():
        if not isinstance(groups, list):
            return f"`hooks.{ev}` is not a list of matcher groups"
        for i, group in enumerate(groups):
            at = f"hooks.{ev}[{i}]"
            if not isinstance(group, dict):
                return f"`{at}` is not an object"
            if not isinstance(group.get("hooks"), list):
                return f"`{at}.hooks` is not a list of hooks"
            for j, hook in enumerate(group["hooks"]):
                if not isinstance(hook, dict):
                    return f"`{at}.hooks[{j}]` is not an object"
    return None


def remove_ours(settings: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``settings`` without ingestd's hooks (``ours_in``; groups and events emptied
    by that go too)."""
    is_ours = ours_in(settings)
    out = copy.deepcopy(settings)
    _remove_our_env(out)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for ev in list(hooks):
        groups = hooks[ev]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        removed = False
        for g in groups:
            if isinstance(g, dict) and isinstance(g.get("hooks"), list):
                kept = [h for h in g["hooks"] if not is_ours(h)]
                if len(kept) != len(g["hooks"]):
                    removed = True
                    if not kept:
                        continue
                    g = {**g, "hooks": kept}
            kept_groups.append(g)
        if removed:
            if kept_groups or any(kept_empty(h) for h in _hooks_in(groups)):
                hooks[ev] = kept_groups
            else:
                del hooks[ev]
    if not hooks and "hooks" in settings and settings["hooks"] != {}:
        del out["hooks"]
    return out


def _hooks_in(groups: list[Any]) -> Iterator[Any]:
    """Every hook object of one event's matcher groups (what is not the expected shape passed over)."""
    for g in groups:
        if isinstance(g, dict) and isinstance(g.get("hooks"), list):
            yield from g["hooks"]


def kept_empty(hook: Any) -> bool:
    """One of our hooks marked ``KEPT_EMPTY``: its event's list was empty before install."""
    if is_marked(hook):
        return bool(hook["headers"].get(KEPT_EMPTY[0]) == KEPT_EMPTY[1])
    if is_forwarder(hook):
        return KEPT_EMPTY_FLAG in shlex.split(hook["command"])[3:]
    return False


def _mark_kept_empty(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Our ``groups`` for an event the user's file has as an empty list, each hook marked so."""
    out = copy.deepcopy(groups)
    for hook in _hooks_in(out):
        if hook.get("type") == "http":
            hook["headers"][KEPT_EMPTY[0]] = KEPT_EMPTY[1]
        else:
            hook["command"] = f"{hook['command']} {KEPT_EMPTY_FLAG}"
    return out


def install(settings: dict[str, Any], t: HookTarget) -> dict[str, Any]:
    """``settings`` with ingestd's hooks (replacing any older ones of ours) and, with ``t.otel``, the
    ``env`` entries that send Claude Code's telemetry to the daemon (``otel_env``); the rest untouched.

    Raises:
        InputError: a hooks block we cannot merge into, or (``--otel``) an ``env`` variable the user
            set to another value.
    """
    out = remove_ours(settings)
    if t.otel:
        _add_otel_env(out, t)
    hooks = out.setdefault("hooks", {})
    for ev, groups in our_hooks(t).items():
        existing = hooks.get(ev, [])
        if not isinstance(existing, list):
            # Never replace what we cannot merge into (parse_settings refuses it first).
            raise InputError(f"`hooks.{ev}` is not a list of matcher groups; nothing was changed")
        hooks[ev] = [*existing, *(_mark_kept_empty(groups) if ev in hooks and not existing else groups)]
    return out


@dataclass(frozen=True, slots=True)
class Plan:
    """What ``install`` / ``uninstall`` would do to one file.

    Attributes:
        path: Path, the settings file.
        old_text: str | None, current content (None: no file).
        new_text: str, content after the change.
    """

    path: Path
    old_text: str | None
    new_text: str

    @property
    def changed(self) -> bool:
        """False when the file would mean the same settings (formatting alone never counts)."""
        if self.old_text is None:
            return self.new_text != render({})
        old: Any = settingsjson.loads(self.old_text) if self.old_text.strip() else {}
        return self.new_text != self.old_text and settingsjson.loads(self.new_text) != old

    def diff(self) -> str:
        """A unified diff of the change ('' when nothing changes)."""
        if not self.changed:
            return ""
        old = (self.old_text or "").splitlines(keepends=True)
        return "".join(
            difflib.unified_diff(old, self.new_text.splitlines(keepends=True), str(self.path), str(self.path))
        )


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist.

    Raises:
        InputError: the path is a directory (or not a regular file), a symbolic link into a
            directory that does not exist, the file is not UTF-8 text or is larger than
            ``SETTINGS_MAX_BYTES``.
        OSError: the file cannot be read (permissions, ...); the CLI reports it by path.
    """
    try:
        return read_capped(path, SETTINGS_MAX_BYTES, "settings file", InputError).decode("utf-8")
    except FileNotFoundError:
        target = Path(os.path.realpath(path))
        if os.path.islink(path) and not target.parent.is_dir():  # written through the link: nowhere to go
            raise InputError(
                f"{path} is a symbolic link to {os.readlink(path)}, whose directory {target.parent} does not"
                " exist: fix the link or remove it; nothing was changed",
                path=str(path),
            ) from None
        return None
    except UnicodeDecodeError as e:
        raise InputError(
            f"{path} is not UTF-8 text (byte {e.start}); fix it and run again; nothing was changed", path=str(path)
        ) from None


def plan(path: Path, old_text: str | None, action: str, target: HookTarget) -> Plan:
    """Pure: the new content for ``action`` (``install`` or ``uninstall``).

    Raises:
        InputError: the current content is not a usable settings object.
    """
    doc = parse_settings(old_text, path)
    new = install(doc, target) if action == "install" else remove_ours(doc)
    crlf = uses_crlf(old_text)
    text = old_text.replace("\r\n", "\n") if old_text is not None and crlf else old_text
    style = settingsjson.detect_style(text)
    spliced = _splice(text, doc, new, style, action)
    out = spliced if spliced is not None else settingsjson.render(new, style)
    return Plan(path, old_text, out.replace("\n", "\r\n") if crlf else out)


def uses_crlf(text: str | None) -> bool:
    """Every line of ``text`` ends in CRLF (and there is at least one line break). Pure.

    Such a file is edited with its CRLFs read as LFs and written back with CRLFs, so the lines it
    keeps are byte for byte the same and the lines added match them (JSON has no raw line break
    inside a string, so every LF is a line end). A file that mixes endings is edited as it is.
    """
    return text is not None and "\r\n" in text and text.count("\n") == text.count("\r\n")


def _splice(
    old_text: str | None, old: dict[str, Any], new: dict[str, Any], style: settingsjson.Style, action: str
) -> str | None:
    """The change made in place in the user's text (``settingsjson.splice_*``), or None to re-render."""
    if action == "install":
        # a pure insertion only: replacing older hooks of ours is a re-render
        return settingsjson.splice_install(old_text, old, new, style) if remove_ours(old) == old else None
    return settingsjson.splice_uninstall(old_text, new, ours_in(old))


def _unchanged(p: Plan, target: Path) -> Callable[[], None]:
    """A check that ``target`` still holds ``p.old_text`` (or still does not exist), run right before
    the rename: another program (Claude Code itself) writing the file after it was read would
    otherwise lose its change, in no backup either."""

    def check() -> None:
        try:
            now: str | None = read_capped(target, SETTINGS_MAX_BYTES, "settings file", InputError).decode(
                "utf-8", "replace"
            )
        except FileNotFoundError:
            now = None
        if now != p.old_text:
            raise InputError(
                f"{p.path} changed while ingestd edited it (another program wrote it): nothing was written; "
                "run the command again",
                path=str(p.path),
            )

    return check


def apply_plan(p: Plan, stamp: str, *, force: bool = False) -> Path | None:
    """Write ``p`` (backup first, atomic replace). Returns the backup path, if one was made.

    A symlinked settings file is written through the link (the target is replaced atomically;
    the link stays). The backup sits beside the path as given, with the old file's mode, and only
    the newest ``settingsjson.KEEP_BACKUPS`` backups are kept. The new file keeps the old one's mode (0600
    when there was none). The file is read again right before the rename; a change since ``p`` was
    planned stops the write (``_unchanged``; the backup just made is removed).

    Args:
        p: the plan; nothing is written when it changes nothing.
        stamp: UTC stamp for the backup name, e.g. ``20261130T010203Z``.
        force: write a file that is read-only (no write permission for this user) all the same.

    Raises:
        InputError: the file is read-only and not ``force``; it changed since it was read.
        OSError: the directory refuses the backup or the file.
    """
    if not p.changed:
        return None
    # Only the ``.claude`` folder is ever created: a missing home or project is an error.
    p.path.parent.mkdir(exist_ok=True)
    target = Path(os.path.realpath(p.path))
    backup = None
    mode = 0o600
    if p.old_text is not None:
        mode = stat.S_IMODE(target.stat().st_mode)
        if not force and (not mode & stat.S_IWUSR or not os.access(target, os.W_OK)):
            raise InputError(
                f"{p.path} is read-only (mode {mode:04o}): someone made it so on purpose, perhaps; "
                "pass --force to write it anyway (it stays read-only); nothing was changed",
                path=str(p.path),
            )
        # After the newest of this second: a name pruned a moment ago is not reused (it would sort oldest).
        taken = [
            int(m.group(2) or 0)
            for b in settingsjson.backups_of(p.path)
            if (m := settingsjson.BACKUP_NAME.search(b.name)) and m.group(1) == stamp
        ]
        n = max(taken) + 1 if taken else 0
        backup = p.path.with_name(f"{p.path.name}.bak-{stamp}" + (f"-{n}" if n else ""))
        while os.path.lexists(backup):
            n += 1
            backup = p.path.with_name(f"{p.path.name}.bak-{stamp}-{n}")
        files.write_new(backup, p.old_text, mode)
        settingsjson.prune_backups(p.path)
    try:
        files.replace(target, p.new_text, mode, before_rename=_unchanged(p, target))
    except InputError:
        if backup is not None:
            backup.unlink(missing_ok=True)
        raise
    return backup


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


def hooks_of(settings: dict[str, Any]) -> Iterator[Any]:
    """Every hook object in ``settings``' ``hooks`` block (what is not the expected shape is passed over)."""
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
    every = list(hooks_of(settings))
    older = any(is_forwarder(h) for h in every) and not any(is_marked(h) for h in every)
    if not older:
        return is_ours
    return lambda hook: is_ours(hook) or _unmarked(hook)
