"""The settings table, its one pure resolver and the config file: every tunable of every command.

Each setting is a row ``(name, default, help)`` with a kind and bounds; the unit is in the
name (``_days``, ``_s``, ``_ms``, ``_bytes``, ``_rows``). A value is resolved in this order, first
found wins::

    explicit argument (a CLI flag) → environment INGESTD_<NAME> → config file → default

The resolver is pure: the environment and the parsed config file are passed in.
The shell reads the config file (``load``: TOML, keys are the setting
names, e.g. ``retention_events_days = 120`` or ``port = 9000``) and resolves once per command
(``ingestd serve`` once at start; the daemon hands the result to whoever needs a value).
A command's flags for its settings are generated from this table
(``ingestd.commands._common.setting_options``), so a flag, its environment variable and its
config key always name the same thing. Adding a setting is adding a row.

The config file (``default_config_path``, ``load_config_file``, ``read_config``, ``load``) is read
here and nowhere else: ``ingestd.cli`` reads it once per command, before the command runs,
and the command resolves its settings from that reading (``ingestd.commands._common.load_settings``).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ingestd import files
from ingestd.errors import ConfigError
from ingestd.files import read_capped

Value = int | float | bool | str | None

# Every int setting is a count, a size or a duration: a billion of any unit is past any sane value and
# keeps days, seconds and bytes inside what timedelta and C ints take (no OverflowError downstream).
MAX_INT = 999_999_999


@dataclass(frozen=True, slots=True)
class Setting:
    """One row of the settings table.

    Attributes:
        name: str, snake_case with the unit in the name; env var is ``INGESTD_`` + upper-case name.
        default: the value when nothing else sets it (None: off / unset).
        help: one line for ``--help`` and the docs.
        kind: ``"int"``, ``"float"``, ``"bool"`` or ``"str"``; None is admitted where the default is
            None (spelled ``""``, ``none`` or ``never`` in the environment).
        low: int | float, the smallest value an int or float setting takes (inclusive).
        high: int | float, the largest (inclusive).
        choices: tuple of str, the values a str setting takes (any case; empty: any string).
    """

    name: str
    default: Value
    help: str
    kind: str
    low: int | float = 0
    high: int | float = MAX_INT
    choices: tuple[str, ...] = ()


# The names of this machine's loopback: the bind rule (an address beyond them needs a token), the
# Host and Origin rules, and the hooks ingestd writes.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})

SETTINGS: tuple[Setting, ...] = (
    Setting("retention_events_days", 90, "Prune `events` rows older than this many days.", "int"),
    Setting(
        "retention_token_usage_days",
        None,
        "Prune `token_usage` older than this many days; None (default) never does. Deleting cost history "
        "also needs the explicit acknowledgement flag on the command line.",
        "int",
    ),
    Setting(
        "retention_token_usage_acknowledged",
        False,
        "Must be true for retention_token_usage_days to delete anything (cost history is lost).",
        "bool",
    ),
    Setting(
        "backup_retention_days",
        30,
        "Delete backup files older than this many days (the newest few are always kept).",
        "int",
    ),
    Setting("backup_keep_newest", 7, "Always keep this many newest backups, whatever their age.", "int"),
    Setting("backup_dir", None, "Backup directory; default: a `backups/` folder next to the database.", "str"),
    Setting("prune_batch_rows", 2000, "Rows deleted per (short) write transaction.", "int", 1),
    Setting(
        "max_line_bytes",
        64 << 20,
        "A transcript line longer than this many bytes is logged as an oversized marker (origin, offset, "
        "length, hash, first 4 KiB, last 64 KiB), never held in memory whole.",
        "int",
    ),
    Setting("schedule_enabled", True, "The daemon runs prune and backup on schedule (off-switch).", "bool"),
    Setting("schedule_prune_interval_s", 86400, "Seconds between scheduled prunes.", "int"),
    Setting("schedule_backup_interval_s", 86400, "Seconds between scheduled backups.", "int"),
    Setting(
        "allowed_origins",
        None,
        "Comma-separated origins (scheme://host[:port]) whose web pages may call the daemon, besides its own "
        "(http://127.0.0.1:PORT, http://localhost:PORT, http://[::1]:PORT). Every other Origin gets 403.",
        "str",
    ),
    Setting(
        "allowed_hosts",
        None,
        "Comma-separated host names the daemon answers to in the Host header, besides 127.0.0.1, localhost, "
        "[::1] and the bound address (a name a client uses when bound beyond loopback). Others get 421.",
        "str",
    ),
    Setting("header_timeout_ms", 10000, "Close a connection whose request headers take longer than this.", "int"),
    Setting("body_timeout_ms", 10000, "Answer 408 when a request body takes longer than this to arrive.", "int"),
    Setting("keepalive_timeout_ms", 15000, "Close a keep-alive connection idle (no request) for this long.", "int"),
    Setting(
        "max_connections",
        512,
        "Open connections the daemon holds at most; past it the longest-idle ones are closed "
        "(also kept below the process's open-file limit).",
        "int",
    ),
    Setting(
        "stall_after_ms",
        5000,
        "/api/health answers 503 when the writer or tailer has been stuck (busy or failing) this long.",
        "int",
    ),
    Setting("host", "127.0.0.1", "Bind address of `serve` (an address beyond loopback needs a token).", "str"),
    Setting("port", 7391, "TCP port of `serve` (0 picks a free one).", "int", 0, 65535),
    Setting(
        "otlp_port",
        0,
        "A second TCP port of `serve` for OTLP exporters' default (4318); 0: none, OTLP on `port` only.",
        "int",
        0,
        65535,
    ),
    Setting("max_body_bytes", 1 << 20, "Hook bodies larger than this many bytes get 413.", "int", 1),
    Setting("hook_timeout_ms", 2000, "A hook not committed within this many ms is answered 503.", "int", 1),
    Setting(
        "watchdog_window_s",
        600.0,
        "Idle seconds before a non-terminal agent becomes `unknown` (logged, so replay applies it too).",
        "float",
        1,
    ),
    Setting("watchdog_interval_s", 30.0, "Seconds between the daemon's watchdog checks.", "float", 0.1),
    Setting("rescan_interval_s", 60.0, "Seconds between the daemon's safety-net rescans of the roots.", "float", 0.1),
    Setting(
        "event_loop",
        "uvloop",
        "The event loop of `serve`: `uvloop` (libuv; about half the loop's CPU per request) or `asyncio`.",
        "str",
        choices=("uvloop", "asyncio"),
    ),
    Setting("tail", True, "`serve` reads transcripts (false: receive hooks only; the flag is --no-tail).", "bool"),
    Setting(
        "log_level",
        "info",
        "Log level of `serve` (debug, info, warning, error, critical).",
        "str",
        choices=("debug", "info", "warning", "error", "critical"),
    ),
    Setting(
        "ship_to",
        None,
        "Team mode: the central PostgreSQL store (URL without a password: libpq's ~/.pgpass or PG* "
        "environment supply it) the daemon ships the log to, batch by batch; prune then keeps unshipped rows.",
        "str",
    ),
    Setting("ship_batch_rows", 20000, "Log rows per shipping transaction (one COPY and one watermark).", "int", 1),
    Setting(
        "ship_batch_bytes",
        32 << 20,
        "Payload bytes (as read) per shipping transaction, at least one row: what a batch holds in memory.",
        "int",
        1,
    ),
    Setting("ship_interval_s", 5, "Seconds between the daemon's shipping passes when it is caught up.", "int"),
    *(
        Setting(
            f"budget_{period}_{level}_usd",
            None,
            f"Budget: at or over this {what} in USD, the daemon's PreToolUse / UserPromptSubmit answer "
            + ("warns (systemMessage)." if level == "soft" else "stops the call (deny / block) with the reason."),
            "float",
        )
        for period, what in (("daily", "spend today"), ("weekly", "spend this week"), ("session", "session spend"))
        for level in ("soft", "hard")
    ),
    *(
        Setting(
            f"budget_five_hour_{level}_pct",
            None,
            "Budget: at or over this percent of the official 5-hour limit (from the status line), the daemon's "
            "PreToolUse / UserPromptSubmit answer " + ("warns." if level == "soft" else "stops the call."),
            "float",
            0,
            100,
        )
        for level in ("soft", "hard")
    ),
)

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_NONE = {"", "none", "never", "null"}


def env_name(name: str) -> str:
    """The environment variable of a setting: ``INGESTD_`` + upper-case name."""
    return "INGESTD_" + name.upper()


_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BLANKS = " \t\r\n"


def number_text(text: str, *, kind: str = "int", signed: bool = False) -> int | float:
    """``text`` as an int (or a float when ``kind`` is ``"float"``): ASCII digits only. Pure.

    Python's ``int()`` and ``float()`` also take other scripts' digits (``１７４００``) and
    underscores (``17_400``): a value that looks like none of the numbers a user types is refused,
    not read as 17400. A sign is accepted only when ``signed`` (where negatives make sense).

    Raises:
        ValueError: anything else (blanks around the number are allowed).
    """
    t = text.strip(_BLANKS)
    if not (_INT_TEXT if kind == "int" else _FLOAT_TEXT).fullmatch(t) or (t[0] in "+-" and not signed):
        raise ValueError(text)
    return int(t) if kind == "int" else float(t)


def _number(setting: Setting, raw: object) -> int | float:
    """``raw`` as the setting's int or float, inside its bounds. Raises ValueError otherwise."""
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise ValueError(raw)
    value: int | float
    if isinstance(raw, str):
        value = number_text(raw, kind=setting.kind, signed=setting.low < 0)
    elif setting.kind == "int":
        value = int(raw) if isinstance(raw, int) else int(str(raw))
    else:
        value = float(raw)
        if not math.isfinite(value):
            raise ValueError(raw)
    if not setting.low <= value <= setting.high:
        raise ValueError(raw)
    return value


def _refuse_null_origin(raw: object, where: str) -> None:
    """Raise ``ConfigError`` for ``null`` in ``allowed_origins``, alone or in a list, saying why.

    ``Origin: null`` (sandboxed frames, ``file:`` pages) can come from any page: the guard
    (``ingestd.http.guard``) never accepts it. ``null`` alone was read as unset, with no effect."""
    if isinstance(raw, str) and any(item.strip().lower() == "null" for item in raw.split(",")):
        raise ConfigError(
            f"setting allowed_origins from {where}: 'null' cannot be allowed: browsers send Origin null from "
            "sandboxed frames and file: pages, which any page can make; serve the page from http(s)://host[:port] "
            "and list that origin",
            setting="allowed_origins",
        )


def _coerce(setting: Setting, raw: object, where: str, typed: bool = False) -> Value:
    """Turn a raw value (string from the environment, TOML value, CLI value) into the setting's kind.

    ``typed``: ``raw`` comes from a file whose values have types (TOML): a number or a yes/no
    setting written as a string (``port = "9000"``, ``tail = "false"``) is the wrong kind there."""
    if raw is None:
        return None
    if setting.name == "allowed_origins":
        _refuse_null_origin(raw, where)
    if isinstance(raw, str) and raw.strip().lower() in _NONE and setting.default is None:
        return None
    if typed and isinstance(raw, str) and setting.kind in ("int", "float", "bool"):
        example = "true or false" if setting.kind == "bool" else "a number, without quotes"
        raise ConfigError(
            f"setting {setting.name} from {where}: {raw!r} is a string; write it as {example}"
            f" ({setting.name} = {raw.strip() if setting.kind != 'bool' else raw.strip().lower()})",
            setting=setting.name,
        )
    try:
        if setting.kind == "bool":
            if isinstance(raw, bool):
                return raw
            if isinstance(raw, str) and raw.strip().lower() in _TRUE | _FALSE:
                return raw.strip().lower() in _TRUE
            raise ValueError(raw)
        if setting.kind in ("int", "float"):
            return _number(setting, raw)
        if not isinstance(raw, str):
            raise ValueError(raw)
        if setting.choices:
            if raw.strip().lower() not in setting.choices:
                raise ValueError(raw)
            return raw.strip().lower()
        return raw
    except ValueError:
        bounds = f" ({setting.low:,} to {setting.high:,})" if setting.kind in ("int", "float") else ""
        if setting.choices:
            bounds = f" (one of {', '.join(setting.choices)})"
        raise ConfigError(
            f"setting {setting.name} from {where}: {raw!r} is not a valid {setting.kind}{bounds}",
            setting=setting.name,
        ) from None


@dataclass(frozen=True, slots=True)
class Settings:
    """Resolved settings: ``values[name]`` and ``sources[name]`` (argument/env/config/default)."""

    values: Mapping[str, Value]
    sources: Mapping[str, str]

    def get_int(self, name: str) -> int:
        """An int setting that must be set."""
        v = self.values[name]
        if not isinstance(v, int) or isinstance(v, bool):
            raise ConfigError(f"setting {name} must be an integer, not {v!r}", setting=name)
        return v

    def get_opt_int(self, name: str) -> int | None:
        """An int setting that may be None (off)."""
        v = self.values[name]
        return None if v is None else self.get_int(name)

    def get_float(self, name: str) -> float:
        """A float (or int) setting that must be set."""
        v = self.values[name]
        if not isinstance(v, int | float) or isinstance(v, bool):
            raise ConfigError(f"setting {name} must be a number, not {v!r}", setting=name)
        return float(v)

    def get_opt_float(self, name: str) -> float | None:
        """A float setting that may be None (off)."""
        v = self.values[name]
        return None if v is None else self.get_float(name)

    def get_str(self, name: str) -> str:
        """A str setting that must be set."""
        v = self.values[name]
        if not isinstance(v, str):
            raise ConfigError(f"setting {name} must be a string, not {v!r}", setting=name)
        return v

    def get_bool(self, name: str) -> bool:
        """A bool setting."""
        v = self.values[name]
        if not isinstance(v, bool):
            raise ConfigError(f"setting {name} must be true or false, not {v!r}", setting=name)
        return v

    def get_opt_str(self, name: str) -> str | None:
        """A str setting that may be None."""
        v = self.values[name]
        return v if isinstance(v, str) else None


def resolve(
    args: Mapping[str, object | None],
    env: Mapping[str, str],
    config: Mapping[str, object],
    table: tuple[Setting, ...] = SETTINGS,
) -> Settings:
    """Resolve every setting: argument → ``INGESTD_*`` environment → config file → default. Pure.

    Args:
        args: explicit values (CLI flags); a None value means "not given".
        env: the environment mapping.
        config: the parsed config file (``load_config_file``); unknown keys are refused.
        table: the settings table.

    Raises:
        ConfigError: an unknown key in the config file, or a value of the wrong kind (naming where).
    """
    known = {s.name for s in table}
    unknown = sorted(set(config) - known)
    if unknown:
        raise ConfigError(f"unknown setting(s) in the config file: {', '.join(unknown)}", settings=unknown)
    values: dict[str, Value] = {}
    sources: dict[str, str] = {}
    for s in table:
        if args.get(s.name) is not None:
            values[s.name], sources[s.name] = _coerce(s, args[s.name], "argument"), "argument"
        elif env_name(s.name) in env:
            values[s.name] = _coerce(s, env[env_name(s.name)], env_name(s.name))
            sources[s.name] = "env"
        elif s.name in config:
            values[s.name], sources[s.name] = _coerce(s, config[s.name], "config file", typed=True), "config"
        else:
            values[s.name], sources[s.name] = s.default, "default"
    return Settings(values, sources)


DEFAULTS: Settings = resolve({}, {}, {})
"""Every setting at its default: the defaults the daemon's configuration records are built from."""


CONFIG_MAX_BYTES = 1 << 20  # a config file is a few lines: a larger one is the wrong file
CONFIG_META = "ingestd.config"
"""Key of the config file as ``ingestd.cli`` read it (``read_config``), in the click context's ``meta``."""


def default_config_path(env: Mapping[str, str]) -> Path:
    """``$INGESTD_CONFIG``, else ``$XDG_CONFIG_HOME/ingestd/config.toml``, else ``~/.config/ingestd/config.toml``."""
    if env.get("INGESTD_CONFIG"):
        return Path(env["INGESTD_CONFIG"])
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base) / "ingestd" / "config.toml"


def load_config_file(path: Path, *, required: bool = False) -> dict[str, object]:
    """Read the TOML config file; a missing file is an empty config unless ``required``. Reads the filesystem.

    The file is checked as the database is (``ingestd.files``): it decides where the daemon
    listens, which web origins may write to it and where the log is shipped, so a file (or a
    directory holding it) that others can change is refused; one owned by root is accepted.

    Args:
        required: the user named the file (``INGESTD_CONFIG``): its absence is an error, not a
            silent fall-back to the defaults.

    Raises:
        ConfigError: the file is missing and ``required``, exists but is not valid TOML, is larger
            than ``CONFIG_MAX_BYTES``, or others can change it.
    """
    try:
        try:
            root_owned = path.stat().st_uid == 0
        except FileNotFoundError:
            raise
        except OSError:
            root_owned = False  # reported below, by the check or the read
        files.require_safe(files.problems([path], uid=0 if root_owned else None))
        data = read_capped(path, CONFIG_MAX_BYTES, "config file")
    except FileNotFoundError:  # missing, or removed between the check and the read: one answer
        if not required:
            return {}
        raise ConfigError(
            f"config file {path} (named by INGESTD_CONFIG) does not exist: create it or unset INGESTD_CONFIG",
            path=str(path),
        ) from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e}", path=str(path)) from e
    try:
        return dict(tomllib.loads(data.decode("utf-8")))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}", path=str(path)) from e


def read_config(env: Mapping[str, str]) -> dict[str, object]:
    """The config file ``env`` names (``default_config_path``), parsed; required when ``INGESTD_CONFIG``
    names it. Reads the filesystem.

    Raises:
        ConfigError: as ``load_config_file``.
    """
    return load_config_file(default_config_path(env), required=bool(env.get("INGESTD_CONFIG")))


def load(
    args: Mapping[str, object | None], env: Mapping[str, str], config: Mapping[str, object] | None = None
) -> Settings:
    """Resolve every setting (``settings.resolve``) with the config file ``env`` names, read here
    unless ``config`` is that file already read (``read_config``). Reads the filesystem.

    Raises:
        ConfigError: the file cannot be read (``load_config_file``), or a setting is wrong.
    """
    return resolve(args, env, read_config(env) if config is None else config)
