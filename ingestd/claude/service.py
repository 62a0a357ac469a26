"""``ingestd service install | uninstall | status``: keep ``ingestd serve`` running.

Linux: a systemd *user* unit, ``$XDG_CONFIG_HOME/systemd/user/ingestd.claude.service``, logging to the
journal (``journalctl --user -u ingestd``). macOS: a launchd agent,
``~/Library/LaunchAgents/io.github.ingestd.plist``, logging to ``<state dir>/ingestd.log`` (launchd
has no journal for agents). Both run ``ingestd serve`` from a stable path (``ingestd.claude.paths``) with the
database and projects roots written as absolute paths (a service does not see the login shell's
environment), start at login and restart on failure. Rendering is pure; ``install`` writes the file
and asks the service manager to load it (``systemctl --user`` / ``launchctl``), ``uninstall``
unloads it and removes the file.
"""

from __future__ import annotations

import os
import plistlib
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ingestd import files
from ingestd.errors import ConfigError
from ingestd.settings import SETTINGS, default_config_path, env_name

UNIT_NAME = "ingestd.claude.service"
AGENT_LABEL = "io.github.ingestd"
RESTART_SEC = 5

# Runs a service-manager command; returns (exit status, output). Tests pass a recorder.
Runner = Callable[[Sequence[str]], tuple[int, str]]


def run_command(argv: Sequence[str]) -> tuple[int, str]:
    """Run ``argv`` (a service-manager command), returning its exit status and combined output."""
    try:
        p = subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError:
        return 127, f"{argv[0]}: not found"
    return p.returncode, (p.stdout + p.stderr).strip()


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """What the service runs.

    Attributes:
        argv: list[str], the whole ``ingestd serve ...`` command line, absolute paths.
        log_file: Path, where launchd writes stdout/stderr (systemd uses the journal).
        platform: str, ``linux`` or ``darwin``.
        env: dict[str, str], variables the daemon gets besides ``PYTHONUNBUFFERED``: the config file
            written out in full (``INGESTD_CONFIG``) and the ``INGESTD_*`` settings of the shell that
            installed it, so the service resolves its settings as ``ingestd serve`` there would.
    """

    argv: list[str]
    log_file: Path
    platform: str
    env: dict[str, str] = field(default_factory=dict)


def serve_argv(
    ingestd: list[str], db: Path, projects: Sequence[Path], port: int | None, token_file: Path | None = None
) -> list[str]:
    """``<ingestd> serve --db DB --projects P ... [--port N] [--token-file F]`` with absolute paths
    (the token file's path, never the token: the service file is readable by others)."""
    argv = [*ingestd, "serve", "--db", os.path.abspath(db)]
    for p in projects:
        argv += ["--projects", os.path.abspath(p)]
    if port is not None:
        argv += ["--port", str(port)]
    if token_file is not None:
        argv += ["--token-file", os.path.abspath(token_file)]
    return argv


def service_env(env: dict[str, str]) -> dict[str, str]:
    """What the service's environment must carry for its settings to resolve as in ``env``: the config
    file's place and every ``INGESTD_<setting>`` variable set there. Pure.

    A config file the user named (``INGESTD_CONFIG``) is passed on as its absolute path (it must
    exist). Otherwise the directory the default file is looked for in is, as ``XDG_CONFIG_HOME``:
    the default file stays optional for the service too (a named one that is missing is an error).
    """
    path = os.path.abspath(default_config_path(env))
    if env.get("INGESTD_CONFIG"):
        out = {"INGESTD_CONFIG": path}
    else:
        out = {"XDG_CONFIG_HOME": os.path.dirname(os.path.dirname(path))}
    out.update({env_name(s.name): env[env_name(s.name)] for s in SETTINGS if env_name(s.name) in env})
    return out


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def check_values(spec: ServiceSpec) -> None:
    """Refuse a value that would change the service file's meaning: every word of the command (the
    paths included) and every environment variable's name and value, checked for control characters
    (a line break ends the line and starts another directive: ``ExecStartPre=...``; a NUL, an escape
    or a lone surrogate cannot be written either). Pure.

    Raises:
        ConfigError: naming the value (the option it follows, or the variable) and the character.
    """
    found: list[tuple[str, str]] = []
    for i, word in enumerate(spec.argv):
        what = f"the value of {spec.argv[i - 1]}" if i and spec.argv[i - 1].startswith("--") else f"{word!r}"
        found.append((what, word))
    for name, value in spec.env.items():
        found += [(f"the name {name!r}", name), (name, value)]
    found.append(("the log file's path", str(spec.log_file)))
    for what, value in found:
        m = _CONTROL.search(value)
        if m is not None:
            raise ConfigError(
                f"{what} holds a control character ({m.group()!r} in {value!r}): it cannot be written into "
                "the service file; use a path or value without it",
                value=value,
            )


def _systemd_env(name: str, value: str) -> str:
    """One ``Environment=`` assignment, quoted (no ``$`` expansion there; ``%`` specifiers doubled);
    ``check_values`` refused control characters before."""
    text = f"{name}={value}".replace("%", "%%").replace("\\", "\\\\").replace('"', '\\"')
    return f'Environment="{text}"\n'


def _systemd_quote(arg: str) -> str:
    """One ``ExecStart=`` word (systemd.service(5) "Command lines"): quoted when needed, ``%`` doubled."""
    arg = arg.replace("%", "%%")
    if arg and not any(c in arg for c in " \t\"'\\;$"):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$") + '"'


def render_systemd(spec: ServiceSpec) -> str:
    """The systemd user unit's text. Pure."""
    exec_start = " ".join(_systemd_quote(a) for a in spec.argv)
    return (
        "# Written by `ingestd service install`; remove with `ingestd service uninstall`.\n"
        "[Unit]\n"
        "Description=ingestd: a durable record of what Claude Code agents did\n"
        f"StartLimitIntervalSec={RESTART_SEC * 20}\n"
        "StartLimitBurst=10\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={exec_start}\n"
        "Restart=on-failure\n"
        f"RestartSec={RESTART_SEC}\n"
        "Environment=PYTHONUNBUFFERED=1\n"
        f"{''.join(_systemd_env(k, v) for k, v in spec.env.items())}"
        "StandardOutput=journal\n"
        "StandardError=journal\n"
        "SyslogIdentifier=ingestd\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def render_launchd(spec: ServiceSpec) -> str:
    """The launchd agent's property list. Pure. ``KeepAlive.SuccessfulExit = false``: restart on failure."""
    doc = {
        "Label": AGENT_LABEL,
        "ProgramArguments": spec.argv,
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": RESTART_SEC,
        "EnvironmentVariables": {"PYTHONUNBUFFERED": "1", **spec.env},
        "StandardOutPath": str(spec.log_file),
        "StandardErrorPath": str(spec.log_file),
        "ProcessType": "Background",
    }
    return plistlib.dumps(doc, sort_keys=False).decode()


def render(spec: ServiceSpec) -> str:
    """The service file for ``spec.platform``.

    Raises:
        ConfigError: a value holds a control character (``check_values``).
    """
    check_values(spec)
    return render_launchd(spec) if spec.platform == "darwin" else render_systemd(spec)


def service_file(platform: str, env: dict[str, str]) -> Path:
    """Where the service file goes: the systemd user unit directory or ``~/Library/LaunchAgents``.

    Raises:
        ConfigError: neither Linux nor macOS.
    """
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    if platform == "darwin":
        return home / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"
    if platform.startswith("linux"):
        base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
        return base / "systemd" / "user" / UNIT_NAME
    raise ConfigError(
        f"ingestd service supports Linux (systemd) and macOS (launchd), not {platform}: run `ingestd serve`"
    )


def _manager(platform: str, path: Path, action: str) -> list[list[str]]:
    """The service-manager commands for ``action`` (``install``, ``uninstall``, ``status``)."""
    if platform == "darwin":
        domain = f"gui/{os.getuid()}"
        return {
            "install": [["launchctl", "bootstrap", domain, str(path)]],
            "uninstall": [["launchctl", "bootout", f"{domain}/{AGENT_LABEL}"]],
            "status": [["launchctl", "print", f"{domain}/{AGENT_LABEL}"]],
        }[action]
    return {
        "install": [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", UNIT_NAME]],
        "uninstall": [["systemctl", "--user", "disable", "--now", UNIT_NAME]],
        "status": [["systemctl", "--user", "status", "--no-pager", UNIT_NAME]],
    }[action]


def install(spec: ServiceSpec, path: Path, *, start: bool, run: Runner = run_command) -> list[str]:
    """Write the service file (0644, replacing ours) and, with ``start``, load and start it.

    Returns:
        One line per service-manager command run, with its outcome.

    Raises:
        ConfigError: a command of the service manager failed: the file is put back as it was (the
            previous one restored, or removed when there was none) and the message says why and
            what to do (``no_user_manager``: no systemd user session).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if spec.platform == "darwin":
        spec.log_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if start and path.exists():  # bootstrap refuses a loaded label: unload the old one first
            run(_manager(spec.platform, path, "uninstall")[0])
    before = path.read_text() if path.exists() else None
    files.replace(path, render(spec), 0o644)
    if not start:
        return []
    try:
        return _run_all(_manager(spec.platform, path, "install"), run)
    except ConfigError:
        if before is None:
            path.unlink(missing_ok=True)
        else:
            files.replace(path, before, 0o644)
        raise


# What systemctl --user says without a user manager to talk to (a container, WSL without systemd,
# a login session without a user bus): seen as "Failed to connect to bus: No medium found".
_NO_USER_BUS = ("Failed to connect to bus", "No medium found", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")


def no_user_manager(output: str) -> str | None:
    """Why ``systemctl --user`` cannot work here and what to do, when ``output`` says there is no
    user bus; None otherwise. Pure."""
    if not any(mark in output for mark in _NO_USER_BUS):
        return None
    return (
        "no systemd user session is reachable (no user bus: a container, WSL without systemd, or a"
        " login without one); run `ingestd serve` under your own supervisor (tmux, your init), or"
        " enable systemd (WSL: `[boot] systemd=true` in /etc/wsl.conf, then `wsl --shutdown`;"
        " over ssh: `loginctl enable-linger $USER`)"
    )


def uninstall(platform: str, path: Path, *, stop: bool, run: Runner = run_command) -> list[str]:
    """Stop and unload the service (with ``stop``), then remove its file. Missing file: nothing to do.

    Returns:
        One line per command run, then what happened to the file.
    """
    if not path.exists():
        return [f"{path}: not installed, nothing to do"]
    # The unit is removed whatever the manager says (it may already be stopped or unknown).
    done = [_outcome(argv, run) for argv in _manager(platform, path, "uninstall")] if stop else []
    path.unlink()
    if stop and platform != "darwin":  # forget the removed unit
        done.append(_outcome(["systemctl", "--user", "daemon-reload"], run))
    done.append(f"{path}: removed")
    return done


def _outcome(argv: list[str], run: Runner) -> str:
    """Run ``argv``; one line saying how it went (a failure is reported, not raised)."""
    code, out = run(argv)
    return f"{' '.join(argv)}: " + ("ok" if code == 0 else f"exit {code}: {out}")


def manager_status(platform: str, path: Path, run: Runner = run_command) -> tuple[int, str]:
    """What the service manager says about the service: ``(exit status, its output)``."""
    return run(_manager(platform, path, "status")[0])


def _run_all(cmds: list[list[str]], run: Runner) -> list[str]:
    done = []
    for argv in cmds:
        code, out = run(argv)
        if code != 0:
            why = no_user_manager(out or "")
            raise ConfigError(
                f"`{' '.join(argv)}` failed (exit {code}): {out or 'no output'}; nothing was installed (the "
                "service file is removed again)" + (f": {why}" if why else "; run `ingestd serve` instead")
            )
        done.append(f"{' '.join(argv)}: ok")
    return done


def current_platform() -> str:
    """``darwin`` or ``linux`` (``sys.platform``)."""
    return "darwin" if sys.platform == "darwin" else sys.platform
