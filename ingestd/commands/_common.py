"""Options and helpers shared by the commands (SPEC §9)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import click
import orjson

from ingestd import deepjson, files, settings
from ingestd import settings as settings_mod
from ingestd.claude.paths import claude_config_dir

# the central store's options and connections, kept in their own module and importable from here
from ingestd.commands._store import open_store as open_store
from ingestd.commands._store import store_connection as store_connection
from ingestd.commands._store import store_option as store_option
from ingestd.core.ledger import Pin
from ingestd.daemon.lock import serving_pid
from ingestd.errors import ConfigError, MigrationError
from ingestd.projection.reproject import UPGRADE, StaleProjection, stale_projection
from ingestd.store.connection import Db, connect, connect_for_check, default_db_path, require_writable
from ingestd.store.migrate import migrate, status

F = TypeVar("F", bound=Callable[..., Any])


def db_option(f: F) -> F:
    """``--db PATH`` (default ``$XDG_DATA_HOME/ingestd/ingestd.db``; env ``INGESTD_DB``)."""
    return click.option(
        "--db",
        "db_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        envvar="INGESTD_DB",
        help="Database file [default: $XDG_DATA_HOME/ingestd/ingestd.db].",
    )(f)


class _AsciiNumber:
    """A click range type taking ASCII digits only (``settings.number_text``): ``int()`` and
    ``float()`` alone also took ``１７４００`` and ``17_400``. A sign only where the range goes below
    zero. Mixed in before ``click.IntRange`` / ``click.FloatRange``."""

    _kind = "int"
    _what = "a whole number"
    min: Any

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            signed = self.min is None or self.min < 0
            try:
                value = settings_mod.number_text(value, kind=self._kind, signed=signed)
            except ValueError:
                self.fail(f"{value!r} is not {self._what} (ASCII digits 0-9)", param, ctx)  # type: ignore[attr-defined]
        return super().convert(value, param, ctx)  # type: ignore[misc]


class IntRange(_AsciiNumber, click.IntRange):
    """``click.IntRange`` taking ASCII digits only (``_AsciiNumber``)."""


class FloatRange(_AsciiNumber, click.FloatRange):
    """``click.FloatRange`` taking ASCII digits only (``_AsciiNumber``)."""

    _kind = "float"
    _what = "a number"


def _click_type(setting: settings_mod.Setting) -> Any:
    """The click type of a setting: its kind, with its bounds for numbers."""
    if setting.kind == "int":
        return IntRange(int(setting.low), int(setting.high))
    if setting.kind == "float":
        return FloatRange(setting.low, setting.high)
    if setting.choices:
        return click.Choice(setting.choices, case_sensitive=False)
    return click.BOOL if setting.kind == "bool" else click.STRING


def setting_option(name: str, *flags: str, **extra: Any) -> Callable[[F], F]:
    """A flag for the setting ``name``, generated from the settings table (``ingestd.settings``).

    The flag is ``--name-with-dashes`` unless ``flags`` are given; its parameter is the setting's
    name; its default is None (not given: the environment, the config file or the table's
    default decide, in that order, when the command resolves); its type and bounds are the
    table's (``extra`` may override them: ``type=``, ``metavar=``, ``is_flag=``); its help is the
    table's, with the default and the environment variable.
    """
    s = settings_mod.BY_NAME[name]
    shown = "none" if s.default is None else str(s.default).lower() if s.kind == "bool" else s.default
    options: dict[str, Any] = {
        "type": _click_type(s),
        "default": None,
        "help": f"{s.help} [default: {shown}; env {settings_mod.env_name(name)}]",
    }
    options.update(extra)
    return click.option(*(flags or (f"--{name.replace('_', '-')}",)), name, **options)


def setting_options(*names: str) -> Callable[[F], F]:
    """``setting_option`` for each of ``names``, in that order in ``--help``."""

    def decorate(f: F) -> F:
        for name in reversed(names):
            f = setting_option(name)(f)
        return f

    return decorate


def load_settings(args: Mapping[str, object | None], env: Mapping[str, str] | None = None) -> settings_mod.Settings:
    """Every setting resolved with ``args`` (the command's options; None: not given), the
    environment (default: ``os.environ``) and the config file as ``ingestd.cli`` read it before the
    command ran (read here when there is no such reading: outside the CLI, or ``status`` with a
    broken file). Reads the config file at most once per command.

    Raises:
        ConfigError: as ``settings.load``.
    """
    ctx = click.get_current_context(silent=True)
    config = None if ctx is None else ctx.meta.get(settings.CONFIG_META)
    return settings.load(args, dict(os.environ) if env is None else env, config)


def json_option(f: F) -> F:
    """``--json``: print one JSON document on stdout."""
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")(f)


def default_projects(env: dict[str, str]) -> list[Path]:
    """``projects`` in Claude Code's config directory (``paths.claude_config_dir``):
    ``$CLAUDE_CONFIG_DIR/projects`` when set and not empty, else ``~/.claude/projects``."""
    return [claude_config_dir(env) / "projects"]


CONFIG_DIR_MARKS = ("projects", "history.jsonl", "settings.json")
"""What a Claude Code config directory (``~/.claude``) holds and a projects root never does (its
entries are project folders named after a path, ``-home-me-code``)."""


def refuse_config_dir_roots(roots: Sequence[Path]) -> None:
    """Refuse a projects root that is a Claude Code config directory, one level too high. Reads only.

    Ingesting ``~/.claude`` instead of ``~/.claude/projects`` files every project folder as a
    session of its own, and ``history.jsonl`` as a session named ``history``, into the append-only
    database for good. A root holding a ``projects`` directory, ``history.jsonl`` or
    ``settings.json`` is such a directory.

    Raises:
        ConfigError: naming the root, what it holds and the root meant (``<root>/projects``).
    """
    for root in roots:
        held = [m for m in CONFIG_DIR_MARKS if (root / m).is_dir() == (m == "projects") and (root / m).exists()]
        if held:
            meant = root / "projects"
            hint = f"did you mean --projects {meant}?" if meant.is_dir() else "pass its projects directory."
            raise ConfigError(
                f"projects root {root} looks like a Claude Code config directory (it holds {', '.join(held)}),"
                f" not a projects root: {hint} Nothing was read.",
                path=str(root),
            )


def refuse_overlapping_roots(roots: Sequence[Path]) -> None:
    """Refuse two projects roots of which one is the other or lies inside it (symlinks resolved). Reads only.

    A transcript's origin is its path relative to its root, so a file under two roots is logged
    twice, under two names, for good: its lines twice in the log and in search, and twice in
    ``export`` (once at each place).

    Raises:
        ConfigError: naming both roots and the one to keep.
    """
    real = [(r, Path(os.path.realpath(r))) for r in roots]
    for i, (a, ra) in enumerate(real):
        for b, rb in real[i + 1 :]:
            if ra == rb:
                raise ConfigError(
                    f"projects roots {a} and {b} are the same directory: pass it once. Nothing was read.",
                    path=str(b),
                )
            inner, outer = (b, a) if rb.is_relative_to(ra) else (a, b) if ra.is_relative_to(rb) else (None, None)
            if inner is not None:
                raise ConfigError(
                    f"projects root {inner} is inside projects root {outer}: its transcripts would be logged twice,"
                    f" under two names. Pass only --projects {outer}. Nothing was read.",
                    path=str(inner),
                )


def projects_option(f: F) -> F:
    """``--projects DIR`` (repeatable)."""
    return click.option(
        "--projects",
        "projects",
        multiple=True,
        type=click.Path(file_okay=False, path_type=Path),
        help="Projects root (repeatable) [default: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects].",
    )(f)


def resolve_db(db_path: Path | None) -> Path:
    """The database path: the option, else the default."""
    return db_path if db_path is not None else default_db_path(dict(os.environ))


def require_db(path: Path) -> None:
    """Refuse a database that does not exist (``ConfigError`` saying how to make one). Reads only."""
    if not path.exists():
        raise ConfigError(f"no database at {path}: run `ingestd ingest` or `ingestd serve` first, or pass --db")


def require_safe_files(db_path: Path, backup_dir: Path | None = None) -> None:
    """Refuse, before anything is written, what ``ingest`` and ``serve`` refuse (``ingestd.files``).

    Every command that writes the database (or its backups) calls this first: the database, its
    ``-wal``, ``-shm`` and ``.lock``, and with ``backup_dir`` that directory and its backups. Reads only.

    Raises:
        ConfigError: naming each unsafe file or directory and the command that fixes it.
    """
    files.require_safe(files.store_problems(db_path, backup_dir))


# How a command opens the database (``open_db``).
Mode = Literal["write", "update", "migrate", "read", "report", "check"]


@dataclass(frozen=True, slots=True)
class Opened:
    """A database a command opened (``open_db``), with what opening it found or did.

    Attributes:
        db: Db, the connection (read-only for ``read`` and ``report``).
        stale: StaleProjection | None, the projections' staleness when opened (``read`` and
            ``report``; None: current), for a command that reports it too (``cost``, ``replay``)
            without computing it again.
        migrated: tuple[Pin, ...], the migrations applied now, oldest first (the writing modes).
        reprojected: int | None, the log rows re-projected now because the projector's rules
            changed (the writing modes; None: the projections were current).
        resumed: int, of ``reprojected``, the log rows an interrupted re-projection had folded
            already, which this one went on from (0: none).
    """

    db: Db
    stale: StaleProjection | None = None
    migrated: tuple[Pin, ...] = ()
    reprojected: int | None = None
    resumed: int = 0


def open_db(
    db_path: Path | None,
    mode: Mode = "write",
    *,
    applying: Callable[[Pin], AbstractContextManager[object]] | None = None,
) -> Opened:
    """The one way a command opens the local database (``db_path``, else the default).

    Modes:
        ``write``: to write; created when missing, migrated, projections current (re-projected
            from the log when the projector's rules changed since it was projected, said on
            stderr). Unsafe files are refused first (``require_safe_files``), and a database this
            user cannot write (``require_writable``).
        ``update``: ``write`` for a command that must not create a database (it has to exist).
        ``migrate``: ``write`` saying nothing itself (``ingestd migrate`` reports what was done).
        ``read``: an existing, fully migrated database, read-only; changes nothing. Projections
            computed under older projector rules, or left part-built by an interrupted
            re-projection, are read as they are, with a note on stderr naming the command that
            re-projects (``ingestd.projection.reproject``); projections of a newer ingestd too
            (``ingestd migrate`` cannot mend them; the note says to upgrade). On read-only media
            the database is opened read-only as it is (``connect``), not refused.
        ``report``: ``read`` for the reports of figures (``cost``, ``sessions``, ``tree``): stale
            or part-built projections are refused, as pending migrations are (their figures are
            not the log's); a newer ingestd's are not.
        ``check``: an existing database for a check that leaves its file's bytes as it found
            them (``ingestd verify``: ``connect_for_check``), its files checked as the writing
            modes check them (the check writes: its trigger probe is rolled back).

    Args:
        applying: the writing modes: each pending migration is applied inside ``applying(pin)``
            (``store.migrate.migrate``).

    Raises:
        ConfigError: no database at the path (``update``, ``read``, ``report``, ``check``); the path is not a
            regular file (``connect``); the database or a file beside it is not the user's own or
            is writable by others (the writing modes, ``ingestd.files``); migrations are pending
            (``read``, ``report``); the projections are stale or part-built (``report``; both
            naming ``ingestd migrate``).
        StorageError: this user cannot write the database file or its ``-wal`` / ``-shm``
            (the writing modes, naming it).
        MigrationError: the ledger refuses (see ``ingestd migrate --status``), or (the writing
            modes) the database was projected by a newer ingestd.
        click.exceptions.Exit: 130 on Ctrl-C during a re-projection (``reproject_if_stale``).
    """
    path = resolve_db(db_path)
    if mode in ("read", "report"):
        return _open_to_read(path, refuse_stale=mode == "report")
    if mode == "check":
        if not path.exists():
            raise ConfigError(f"no database at {path}: pass --db")
        require_safe_files(path)
        return Opened(connect_for_check(path))
    if mode == "update":
        require_db(path)
    require_safe_files(path)
    require_writable(path)
    db = connect(path)
    _refuse_under_a_daemon(db, path)
    migrated = tuple(migrate(db, applying=applying))
    folded, resumed = reproject_if_stale(db, path)
    if folded and mode != "migrate":
        went_on = f" ({resumed} of them folded already by the interrupted one it resumed)" if resumed else ""
        click.echo(
            f"ingestd: the projector's rules changed since this database was projected: "
            f"re-projected {folded} log rows from the log{went_on}",
            err=True,
        )
    return Opened(db, migrated=migrated, reprojected=folded, resumed=resumed)


def _refuse_under_a_daemon(db: Db, path: Path) -> None:
    """Refuse to apply pending migrations, or to re-project, while a daemon serves the database.

    A daemon runs the ingestd it started with (an upgrade installed a newer one beside it): under a
    new schema it would refuse every hook until restarted, and under new projector rules it would go
    on folding by its own into the projections being rebuilt, from states it holds in memory. A
    daemon of this ingestd has nothing stale to re-project but while it starts, when it is doing so
    itself. Either way the daemon migrates and re-projects as it starts.

    Raises:
        ConfigError: migrations are pending or the projections are to be re-projected, and a daemon
            holds the database's lock.
    """
    pending = status(db).pending
    stale = None if pending else stale_projection(db, path)
    if not pending and (stale is None or stale.newer or stale.fix == UPGRADE):
        return  # nothing to do, or the writer refuses a newer ingestd's projections anyway
    pid = serving_pid(path)
    if pid is None:
        return
    db.close()
    restart = "restart the daemon (its service, or stop `ingestd serve` and start it again)"
    if pending:
        names = ", ".join(p.stem for p in pending)
        raise ConfigError(
            f"refused: the database at {path} needs migrations {names}, and a daemon (pid {pid}) is serving it "
            f"with an ingestd that does not know them (under the new schema it would refuse every hook): {restart}, "
            "which applies them as it starts",
            pid=pid,
            pending=[p.stem for p in pending],
        )
    assert stale is not None
    why = (
        "a re-projection of it was interrupted"
        if stale.interrupted
        else f"it was projected under the projector's rules revision {stale.stored}, this ingestd's is {stale.current}"
    )
    raise ConfigError(
        f"refused: the database at {path} is to be re-projected ({why}), and a daemon (pid {pid}) is serving it: "
        "a daemon that is starting re-projects it itself (wait for it: `ingestd status`), and one that runs "
        f"other projector rules would fold by them into the projections rebuilt: {restart}, which re-projects "
        "it as it starts",
        pid=pid,
        stale=stale.to_json(),
    )


def _open_to_read(path: Path, *, refuse_stale: bool) -> Opened:
    """``open_db``'s ``read`` and ``report`` modes."""
    require_db(path)
    db = connect(path, readonly=True)
    st = status(db)
    if st.problems:
        raise MigrationError("; ".join(st.problems), problems=st.problems)
    if st.pending:
        names = ", ".join(f"{p.stem}" for p in st.pending)
        raise ConfigError(f"the database at {path} needs migrations {names}: run `ingestd migrate --db {path}`")
    stale = stale_projection(db, path)
    if stale is not None and refuse_stale and not stale.newer:
        db.close()
        raise ConfigError(f"refused: {stale.message()}", stale=stale.to_json())
    if stale is not None:
        click.echo(f"ingestd: note: {stale.message()}", err=True)
    return Opened(db, stale=stale)


def open_reader(
    db_path: Path | None, store_url: str | None, *, refuse_stale: bool = False
) -> tuple[Any, StaleProjection | None]:
    """The connection a report reads: the central store at ``store_url`` (``open_store``, never
    stale) when given, else the local database (``open_db``: ``report`` with ``refuse_stale``,
    else ``read``). Same errors as those."""
    if store_url:
        return open_store(store_url), None
    opened = open_db(db_path, "report" if refuse_stale else "read")
    return opened.db, opened.stale


def note_stale(doc: dict[str, Any], stale: StaleProjection | None) -> dict[str, Any]:
    """``doc`` with ``stale_projection`` (``StaleProjection.to_json``) when ``stale`` (from
    ``open_db``), as ``cost --json`` has it; unchanged otherwise. Mutates ``doc``."""
    if stale is not None:
        doc["stale_projection"] = stale.to_json()
    return doc


def reproject_if_stale(conn: Db, path: Path) -> tuple[int | None, int]:
    """``ingestd.projection.reproject.ensure_current`` for a command; Ctrl-C part-way says what it left.

    Returns:
        ``(folded, resumed)``: None when the projections were current, else the number of log rows
        re-projected; and of those, the rows an interrupted re-projection it went on from had
        folded (``reproject.resumable``; 0: it started from the beginning).

    Raises:
        click.exceptions.Exit: 130 after Ctrl-C, having said on stderr that the projections are
            partial and to run ``ingestd migrate`` again.
        MigrationError: the database was projected by a newer ingestd.
    """
    # Imported here: only writers pay for the projector's import.
    from ingestd.projection.reproject import ensure_current
    from ingestd.store.identity import database_identity

    bar = RebuildBar(sys.stderr)
    try:
        done = ensure_current(conn, path, ctx=database_identity(conn), progress=bar)
        return (None, 0) if done is None else (done.log_rows, done.resumed_rows)
    except KeyboardInterrupt:
        click.echo(
            f"ingestd: interrupted while re-projecting: the projections hold only part of the log; "
            f"run `ingestd migrate --db {path}` again: it goes on from where this one stopped",
            err=True,
        )
        raise click.exceptions.Exit(130) from None
    finally:
        bar.close()


class RebuildBar:
    """A re-projection's progress (log rows folded of the log's rows) as a rich progress bar on
    ``stream`` when it is a terminal; nothing otherwise (the command's report says what was done)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._bar: Any = None
        self._task: Any = None

    def __call__(self, done: int, total: int) -> None:
        """``done`` of ``total`` log rows re-projected."""
        if self._bar is None:
            if not (hasattr(self._stream, "isatty") and self._stream.isatty()):
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            self._bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(file=self._stream),
                transient=True,
            )
            self._bar.start()
            what = "re-projecting the log" if done == 0 else "re-projecting the log (resumed)"
            self._task = self._bar.add_task(what, total=total)
        self._bar.update(self._task, completed=done, total=total)

    def close(self) -> None:
        """Remove the bar (when one was shown)."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def migration_status(stream: Any) -> Callable[[Pin], AbstractContextManager[object]]:
    """``open_db``'s ``applying`` for a command: while a migration runs, a rich status naming it on
    ``stream`` when it is a terminal (removed when it is done); nothing otherwise."""

    @contextmanager
    def applying(pin: Pin) -> Iterator[None]:
        if not (hasattr(stream, "isatty") and stream.isatty()):
            yield
            return
        from rich.console import Console
        from rich.live import Live
        from rich.spinner import Spinner

        # drawn on entering (a status would wait for its first refresh), removed on leaving
        with Live(Spinner("dots", f"applying migration {pin.stem}"), console=Console(file=stream), transient=True):
            yield

    return applying


def emit_json(doc: Any) -> None:
    """Write one JSON document (and a newline) to stdout, in pieces (``deepjson.chunks``), every byte.

    Raises:
        OSError: stdout took no bytes of a piece (never a document cut short with exit 0).
    """
    out = sys.stdout.buffer
    for chunk in deepjson.chunks(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS):
        write_all(out, chunk)
    write_all(out, b"\n")
    sys.stdout.flush()


def write_all(out: Any, data: bytes) -> None:
    """Write all of ``data`` to the binary stream ``out``, again for what a short ``write`` left.

    One ``write`` of more than 2 GiB writes 2,147,479,552 bytes (Linux's per-call maximum): the rest
    would be dropped silently.

    Raises:
        OSError: ``out.write`` accepted nothing (returned 0 or None).
    """
    view = memoryview(data)
    while view:
        n = out.write(view)
        if not n:
            raise OSError(f"stdout accepted none of the last {len(view)} bytes of the answer")
        view = view[n:]
