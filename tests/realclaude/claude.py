"""A real Claude Code (the npm package ``@anthropic-ai/claude-code`` at ``VERSION``), found or installed,
and run headless (``claude -p``) in an isolated home against a loopback stand-in of the API.

Where it is looked for, in order: ``$REALCLAUDE_PREFIX`` (an npm prefix), then ``PREFIX`` (the user's
cache: ``${XDG_CACHE_HOME:-~/.cache}/ingestd-test/claude-code-VERSION``, where ``.ci/run`` installs it).
``find_or_install()`` installs it into ``PREFIX`` with npm when it is in neither (once per machine:
other workers wait on a lock file), and says why not when npm or the package is unavailable, so the
tests skip with that reason. Whichever is found must answer ``--version`` with ``VERSION``.

``run(...)`` starts ``claude -p PROMPT`` with a fresh ``HOME`` and ``CLAUDE_CONFIG_DIR`` (``HOME/.claude``)
under a directory of the test's, an environment built from nothing but what Claude Code needs (none
of the machine's ``ANTHROPIC_*``, ``CLAUDE_*`` or ``OTEL_*`` variables leak in), the settings and
environment the test gives, and a timeout; it returns a ``Run``: exit code, stdout, stderr, and the
tree Claude Code wrote (transcripts under ``HOME/.claude/projects``, a debug log).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import termios
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSION = "2.1.332"
PACKAGE = "@anthropic-ai/claude-code"
# The model the runs ask for: one ingestd's price table knows, so costs are exact, not unpriced.
MODEL = "claude-sonnet-4-5-20250929"
API_KEY = "sk-ant-api03-standin-not-a-real-key"
INSTALL_TIMEOUT_S = 600
# the flags with which Claude Code resumes a session instead of starting the one --session-id names
_RESUMES = frozenset({"--resume", "-r", "--continue", "-c"})
_CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")  # read once, before tests patch HOME
PREFIX = _CACHE_HOME / "ingestd-test" / f"claude-code-{VERSION}"
ENV_PREFIX = "REALCLAUDE_PREFIX"
_PREFIX_FROM_ENV = os.environ.get(ENV_PREFIX)


class Unavailable(Exception):
    """Claude Code cannot be had here; the message says why (tests skip with it)."""


def _candidates(prefix: Path) -> list[Path]:
    """The executables an npm prefix may hold: the package's bin (the native binary once its
    postinstall has copied it in), else the platform package's binary itself."""
    mods = prefix / "node_modules" / "@anthropic-ai"
    found = [prefix / "node_modules" / ".bin" / "claude"]
    found += sorted(mods.glob("claude-code-*/claude")) if mods.is_dir() else []
    return found


def version_of(exe: Path) -> str | None:
    """What ``exe --version`` says (``2.1.332``), or None when it does not run."""
    try:
        r = subprocess.run(
            [str(exe), "--version"], capture_output=True, text=True, timeout=60, env=_base_env(exe.parent)
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    return r.stdout.split()[0] if r.stdout.split() else None


def find(prefix: Path) -> Path | None:
    """The Claude Code ``VERSION`` executable in npm prefix ``prefix``, or None."""
    for exe in _candidates(prefix):
        if exe.exists() and version_of(exe) == VERSION:
            return exe
    return None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def install(prefix: Path) -> Path:
    """``npm install PACKAGE@VERSION`` into npm prefix ``prefix`` (under a lock: one install per machine).

    Raises:
        Unavailable: no npm, npm failed (no network, no such version), or the result does not run.
    """
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable(f"npm is not installed, so {PACKAGE}@{VERSION} cannot be installed (.ci/run installs it)")
    with _locked(prefix.with_name(prefix.name + ".lock")):
        exe = find(prefix)
        if exe is not None:
            return exe
        prefix.mkdir(parents=True, exist_ok=True)
        argv = [npm, "install", "--prefix", str(prefix), "--no-save", "--no-audit", "--no-fund", f"{PACKAGE}@{VERSION}"]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"npm install {PACKAGE}@{VERSION} took over {INSTALL_TIMEOUT_S} s") from None
        if r.returncode != 0:
            tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
            raise Unavailable(f"npm install {PACKAGE}@{VERSION} failed: {' / '.join(tail)}")
        exe = find(prefix)
        if exe is None:
            raise Unavailable(
                f"npm installed {PACKAGE}@{VERSION} into {prefix} but no executable there answers --version {VERSION}"
            )
        return exe


def find_or_install() -> Path:
    """The Claude Code ``VERSION`` executable: ``$REALCLAUDE_PREFIX``, else ``PREFIX``, else installed there.

    Raises:
        Unavailable: with the reason.
    """
    if _PREFIX_FROM_ENV:
        exe = find(Path(_PREFIX_FROM_ENV))
        if exe is None:
            raise Unavailable(f"${ENV_PREFIX}={_PREFIX_FROM_ENV} holds no {PACKAGE}@{VERSION}")
        return exe
    return find(PREFIX) or install(PREFIX)


def _base_env(bin_dir: Path) -> dict[str, str]:
    path = os.pathsep.join([str(bin_dir), "/usr/local/bin", "/usr/bin", "/bin"])
    env = {"PATH": path, "LANG": os.environ.get("LANG", "C.UTF-8"), "TERM": "dumb"}
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


@dataclass(frozen=True, slots=True)
class Run:
    """What one ``claude -p`` run did.

    Attributes:
        argv: list[str]. returncode: int. stdout: str. stderr: str. elapsed_s: float, wall time.
        home: Path, its ``HOME``. config_dir: Path, its ``CLAUDE_CONFIG_DIR`` (``home/.claude``).
        cwd: Path, the project directory it ran in. debug_log: Path, its ``--debug-file``.
        session_id: str | None, the ``--session-id`` it was given (None for a resume or continue,
            which keep or choose their own).
    """

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float
    home: Path
    config_dir: Path
    cwd: Path
    debug_log: Path
    session_id: str | None = None

    @property
    def projects(self) -> Path:
        """``~/.claude/projects``: the transcripts tree."""
        return self.config_dir / "projects"

    def transcripts(self) -> list[Path]:
        """Every ``.jsonl`` file under ``projects`` (main sessions and subagents), sorted."""
        return sorted(self.projects.rglob("*.jsonl")) if self.projects.is_dir() else []

    def records(self, path: Path) -> list[dict[str, Any]]:
        """The JSON records of one transcript file."""
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def main_transcripts(self) -> list[Path]:
        """The main sessions' transcripts (``projects/<slug>/<session>.jsonl``)."""
        return [p for p in self.transcripts() if p.parent.parent == self.projects]

    def subagent_transcripts(self) -> list[Path]:
        """The subagents' transcripts (``projects/<slug>/<session>/subagents/agent-<id>.jsonl``)."""
        return [p for p in self.transcripts() if p.parent.name == "subagents"]

    def session_ids(self) -> list[str]:
        """The sessions of every main transcript in this run's home (earlier runs' included)."""
        return [p.stem for p in self.main_transcripts()]

    def transcript(self) -> Path:
        """This run's main transcript (``session_id``'s)."""
        if self.session_id is None:
            raise AssertionError("a resumed run has no session id of its own: look in session_ids()")
        (path,) = [p for p in self.main_transcripts() if p.stem == self.session_id]
        return path

    def debug(self) -> str:
        return self.debug_log.read_text(errors="replace") if self.debug_log.exists() else ""

    def check(self) -> Run:
        """This run, or AssertionError with its output when Claude Code exited non-zero."""
        if self.returncode != 0:
            raise AssertionError(
                f"claude exited {self.returncode}\nstdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-2000:]}"
            )
        return self


@dataclass
class Claude:
    """Runs one Claude Code executable against the API at ``base_url``, in homes under ``root``.

    Layout: ``root/<home>`` is ``HOME`` (``home`` by default), ``root/<home>/.claude`` its
    ``CLAUDE_CONFIG_DIR``, ``root/<home>/proj`` the default project directory (so paths read
    ``/home/user/proj`` once ``sanitise`` has replaced the home), ``root/tmp`` its ``TMPDIR``
    (where 2.1.332 keeps background tasks' output files).
    """

    exe: Path
    root: Path
    base_url: str
    model: str = MODEL
    runs: list[Run] = field(default_factory=list)

    def home(self, name: str = "home") -> Path:
        """An isolated home under ``root`` (made on first use, with ``.claude/`` and ``proj/`` in it)."""
        home = self.root / name
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        (home / "proj").mkdir(exist_ok=True)
        return home

    def write_settings(self, settings: Mapping[str, Any], *, home: Path | None = None) -> Path:
        """``settings`` as the user's ``settings.json`` in ``home`` (the default home)."""
        path = (home or self.home()) / ".claude" / "settings.json"
        path.write_text(json.dumps(settings, indent=2) + "\n")
        return path

    def env(self, home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a run gets: nothing of the machine's but PATH and LANG."""
        tmp = self.root / "tmp"
        tmp.mkdir(exist_ok=True)
        env = _base_env(self.exe.parent)
        env.update(
            {
                "HOME": str(home),
                "TMPDIR": str(tmp),
                "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                "ANTHROPIC_BASE_URL": self.base_url,
                "ANTHROPIC_API_KEY": API_KEY,
                "DISABLE_AUTOUPDATER": "1",
                # an error answer ends the turn at once (StopFailure) instead of after ten retries
                "CLAUDE_CODE_MAX_RETRIES": "0",
            }
        )
        env.update(extra or {})
        return env

    def _prepare(
        self, home: Path | None, cwd: Path | None, settings: Mapping[str, Any] | None
    ) -> tuple[Path, Path, Path]:
        home = home or self.home()
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        cwd = cwd or home / "proj"
        cwd.mkdir(parents=True, exist_ok=True)
        if settings is not None:
            self.write_settings(settings, home=home)
        return home, cwd, self.root / f"debug-{len(self.runs) + 1}.log"

    def run(
        self,
        prompt: str,
        *,
        home: Path | None = None,
        cwd: Path | None = None,
        settings: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        timeout_s: float = 90.0,
        stdin: str | None = None,
    ) -> Run:
        """``claude -p PROMPT --model MODEL [args]`` in ``cwd`` (default ``home/proj``), HOME ``home``
        (default ``root/home``). ``settings`` is written as the user's settings.json first (a file
        already there, such as one ``ingestd hooks install`` wrote, is kept when it is None); ``env``
        is added to the run's environment; ``stdin`` is its standard input (``--input-format
        stream-json`` reads control requests there). Raises ``subprocess.TimeoutExpired`` (after
        killing it) past ``timeout_s``."""
        home, cwd, debug_log = self._prepare(home, cwd, settings)
        sid = None if _RESUMES.intersection(args) else str(uuid.uuid4())
        argv = [str(self.exe), "-p", prompt, "--model", self.model, "--debug-file", str(debug_log), *args]
        argv += ["--session-id", sid] if sid else []
        started = time.monotonic()
        r = subprocess.run(
            argv, cwd=cwd, env=self.env(home, env), capture_output=True, text=True, timeout=timeout_s, input=stdin or ""
        )
        elapsed = time.monotonic() - started
        run = Run(argv, r.returncode, r.stdout, r.stderr, elapsed, home, home / ".claude", cwd, debug_log, sid)
        self.runs.append(run)
        return run

    @contextlib.contextmanager
    def sdk(
        self,
        *,
        home: Path | None = None,
        cwd: Path | None = None,
        settings: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
    ) -> Iterator[Sdk]:
        """``claude -p --input-format stream-json --output-format stream-json``, driven message by
        message as the Agent SDK does (``Sdk.send`` a user message or a control request, ``Sdk.wait``
        for its result). Leaving the block closes stdin and waits for the exit (SIGKILL after 60 s);
        the run is appended to ``runs``, its stdout being the JSON lines Claude Code wrote."""
        home, cwd, debug_log = self._prepare(home, cwd, settings)
        sid = None if _RESUMES.intersection(args) else str(uuid.uuid4())
        argv = [str(self.exe), "-p", "--model", self.model, "--debug-file", str(debug_log)]
        argv += ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose", *args]
        argv += ["--session-id", sid] if sid else []
        started = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=self.env(home, env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        session = Sdk(proc)
        try:
            yield session
        finally:
            code, stderr = session.close()
            out = "".join(json.dumps(m) + "\n" for m in session.out)
            elapsed = time.monotonic() - started
            self.runs.append(Run(argv, code, out, stderr, elapsed, home, home / ".claude", cwd, debug_log, sid))

    @contextlib.contextmanager
    def interactive(
        self,
        *,
        home: Path | None = None,
        cwd: Path | None = None,
        settings: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        size: tuple[int, int] = (40, 120),
    ) -> Iterator[Terminal]:
        """Claude Code's interactive UI on a pseudo-terminal of ``size`` (rows, columns), for what
        only it does (the status line runs there, not under ``-p``). Onboarding, the API-key prompt
        and the folder-trust dialog are answered beforehand in ``.claude.json``. The block drives it
        through the ``Terminal``; leaving the block types ``/exit`` and waits for the exit (SIGTERM,
        then SIGKILL, after 15 s), and the run is appended to ``runs``."""
        home, cwd, debug_log = self._prepare(home, cwd, settings)
        state = home / ".claude" / ".claude.json"
        doc = json.loads(state.read_text()) if state.exists() else {}
        doc.update({"hasCompletedOnboarding": True, "theme": "dark", "numStartups": 1})
        doc.setdefault("customApiKeyResponses", {"approved": [API_KEY[-20:]], "rejected": []})
        doc.setdefault("projects", {}).setdefault(str(cwd), {}).update(
            {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
        )
        state.write_text(json.dumps(doc, indent=2))
        run_env = self.env(home, {"TERM": "xterm-256color", **(env or {})})
        sid = None if _RESUMES.intersection(args) else str(uuid.uuid4())
        argv = [str(self.exe), "--model", self.model, "--debug-file", str(debug_log), *args]
        argv += ["--session-id", sid] if sid else []
        started = time.monotonic()
        pid, fd = pty.fork()
        if pid == 0:  # the child: exec Claude Code on the terminal
            try:
                os.chdir(cwd)
                os.execve(argv[0], argv, run_env)
            finally:
                os._exit(127)
        rows, cols = size
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        term = Terminal(pid, fd)
        try:
            yield term
        finally:
            code = term.close()
            elapsed = time.monotonic() - started
            run = Run(argv, code, term.screen(), "", elapsed, home, home / ".claude", cwd, debug_log, sid)
            self.runs.append(run)


@dataclass
class Sdk:
    """A ``claude -p`` reading stream-json on stdin: ``out`` holds every JSON line it wrote so far."""

    proc: subprocess.Popen[str]
    out: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="claude-sdk-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(json.JSONDecodeError):
                msg = json.loads(line)
                with self._lock:
                    self.out.append(msg)

    def send(self, message: Mapping[str, Any]) -> None:
        """Write one stream-json message (``user_message`` and ``control_request`` build them)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def messages(self, type_: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [m for m in self.out if type_ is None or m.get("type") == type_]

    def wait(self, what: str, cond: Callable[[], Any], timeout_s: float = 60.0) -> Any:
        """Poll ``cond`` until truthy; AssertionError naming ``what`` after ``timeout_s`` (or if the
        process has exited)."""
        deadline = time.monotonic() + timeout_s
        while True:
            if value := cond():
                return value
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"gave up waiting for {what}; last messages: {self.messages()[-3:]}")
            time.sleep(0.02)

    def wait_results(self, n: int, timeout_s: float = 60.0) -> list[dict[str, Any]]:
        """Wait until ``n`` ``result`` messages (ends of turns) have arrived; they are returned."""
        return list(self.wait(f"{n} results", lambda: (r := self.messages("result")) and len(r) >= n and r, timeout_s))

    def close(self, timeout_s: float = 60.0) -> tuple[int, str]:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(10)
        stderr = self.proc.stderr.read() if self.proc.stderr else ""
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        return self.proc.returncode, stderr


def user_message(text: str) -> dict[str, Any]:
    """A stream-json user message."""
    return {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None, "session_id": ""}


def control_request(request_id: str, subtype: str, **fields: Any) -> dict[str, Any]:
    """A stream-json control request (``set_model``, ``register_repo_root``, ``interrupt`` ...)."""
    return {"type": "control_request", "request_id": request_id, "request": {"subtype": subtype, **fields}}


_ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>]")


@dataclass
class Terminal:
    """The pseudo-terminal of an interactive Claude Code: ``type`` keys, read the ``screen`` (all
    output so far, escape sequences removed), ``wait`` for a condition with a deadline."""

    pid: int
    fd: int
    raw: bytearray = field(default_factory=bytearray)
    exit_code: int | None = None

    def pump(self, timeout_s: float = 0.05) -> None:
        """Read what the program wrote within ``timeout_s``."""
        ready, _, _ = select.select([self.fd], [], [], timeout_s)
        if ready:
            with contextlib.suppress(OSError):  # raised once the program has closed the terminal
                self.raw += os.read(self.fd, 1 << 16)

    def screen(self) -> str:
        return _ANSI.sub("", self.raw.decode("utf-8", "replace"))

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def wait(self, what: str, cond: Callable[[], Any], timeout_s: float = 30.0) -> Any:
        """Pump output until ``cond()`` is truthy (returned); AssertionError naming ``what`` after
        ``timeout_s``, with the screen's tail."""
        deadline = time.monotonic() + timeout_s
        while True:
            if value := cond():
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout_s} s waiting for {what}; screen: {self.screen()[-1500:]}"
                )
            self.pump()

    def submit(self, prompt: str, timeout_s: float = 30.0) -> None:
        """Wait for the prompt box, type ``prompt``, wait for its echo, press Enter."""
        self.wait("the prompt box", lambda: "\u276f" in self.screen(), timeout_s)
        self.type(prompt)
        flat = prompt.replace(" ", "")
        self.wait("the typed prompt", lambda: flat in self.screen().replace(" ", ""), timeout_s)
        self.type("\r")

    def _reaped(self) -> bool:
        if self.exit_code is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == 0:
                return False
            self.exit_code = os.waitstatus_to_exitcode(status)
        return True

    def close(self, timeout_s: float = 15.0) -> int:
        """Type ``/exit``; SIGTERM then SIGKILL if it has not exited within ``timeout_s``. The exit code."""
        with contextlib.suppress(OSError):
            self.type("\x1b")
            self.pump(0.2)
            self.type("/exit")
            self.pump(0.3)
            self.type("\r")
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, sig)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if self._reaped():
                    os.close(self.fd)
                    return int(self.exit_code or 0)
                self.pump(0.05)
        raise AssertionError("claude did not exit after SIGKILL")
