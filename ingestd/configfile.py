"""The config file: where it is, reading it (checked, capped, TOML), and settings resolved with it.

The shell half of the settings (``ingestd.settings`` holds the table and the pure resolver): the
only place that reads the file. ``ingestd.cli`` reads it once per command, before the command runs,
and the command resolves its settings from that reading (``ingestd.commands._common.load_settings``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from ingestd import filecheck
from ingestd.errors import ConfigError
from ingestd.readcap import read_capped
from ingestd.settings import Settings, resolve

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

    The file is checked as the database is (``ingestd.filecheck``): it decides where the daemon
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
        filecheck.require_safe(filecheck.problems([path], uid=0 if root_owned else None))
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
