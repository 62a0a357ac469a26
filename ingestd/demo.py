"""``make demo``: ingest a projects tree into a temporary database and show what came out.

Usage: ``python -m ingestd.demo [CORPUS_DIR]`` (default: your own Claude Code projects,
``$CLAUDE_CONFIG_DIR/projects`` or ``~/.claude/projects``, when it holds a transcript; else
``../shared/corpus/claude-projects``; else the bundled ``fixtures/projects`` tree). The tree is only
read; the database is temporary. Prints the ingest summary, the sessions, the agent tree of the
session with the most agents, and the cost summary, through the report commands; exits non-zero when
a step fails (``main``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from ingestd.commands._common import default_projects
from ingestd.commands.ingest import run_ingest
from ingestd.errors import IngestdError
from ingestd.store.connection import connect


def _corpus(argv: list[str], env: dict[str, str]) -> Path:
    """The tree to ingest: the argument (when non-empty: ``make demo CORPUS=...`` wins), else the
    user's own projects when they hold a transcript, else the real corpus beside the clone, else
    fixtures. Reads ``env`` and lists directories only."""
    if argv and argv[0]:
        return Path(argv[0])
    [own] = default_projects(env)
    if _has_transcript(own):
        return own
    repo = Path(__file__).resolve().parent.parent
    shared = repo.parent / "shared" / "corpus" / "claude-projects"
    return shared if shared.is_dir() else repo / "fixtures" / "projects"


def _has_transcript(root: Path) -> bool:
    """Whether a project folder of ``root`` holds a ``.jsonl`` (one is enough: stops at the first)."""
    try:
        return any(True for d in root.iterdir() if d.is_dir() for _ in d.glob("*.jsonl"))
    except OSError:
        return False


def _run(args: list[str]) -> bool:
    """Run one ``ingestd`` command in-process; True when it exited 0.

    A failing command has already printed its one-line message (``IngestdError``) or click's usage
    error; nothing is raised.
    """
    from ingestd.cli import cli

    try:
        code = cli.main(args=args, prog_name="ingestd", standalone_mode=False)
    except SystemExit as e:  # IngestdError: its message is printed, its exit code raised
        return e.code in (0, None)
    except click.ClickException as e:
        e.show()
        return False
    return code in (0, None)


def _busiest_session(db: Path) -> str | None:
    """The session with the most edges, then the most agents (the tree worth showing), if any."""
    conn = connect(db, readonly=True)
    try:
        top = conn.execute(
            "SELECT a.session_id FROM agents a GROUP BY a.session_id ORDER BY"
            " (SELECT count(*) FROM orchestration_edges e WHERE e.session_id = a.session_id) DESC,"
            " count(*) DESC, a.session_id LIMIT 1"
        ).fetchall()
    finally:
        conn.close()
    return str(top[0][0]) if top else None


def main(argv: list[str]) -> int:
    """Run the demo: ingest ``argv[0]`` (or the default tree) into a temporary database, then the
    ``sessions``, ``tree`` and ``cost`` reports of it.

    Returns:
        0 when every step succeeded; 1 when one failed: the ingest raised ``IngestdError`` (its
        message printed), a report command exited non-zero or the tree held no session to show
        (the failed steps named on stderr after the others ran); 2 when the corpus folder does not
        exist.
    """
    corpus = _corpus(argv, dict(os.environ))
    if not corpus.is_dir():
        click.echo(f"demo: no corpus at {corpus}", err=True)
        return 2
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ingestd-demo-") as tmp:
        db = Path(tmp) / "demo.db"
        click.echo(f"== ingest {corpus} (read only, into a temporary database; make demo CORPUS=DIR for another)")
        try:
            s = run_ingest(db, (corpus,), show_progress=sys.stderr.isatty())
        except IngestdError as e:
            click.echo(f"demo: ingest failed: {e.message}", err=True)
            return 1
        d = s.to_json()
        click.echo(
            f"files {d['files']}  lines {d['lines']}  sessions {d['sessions']}  agents {d['agents']}  "
            f"messages {d['messages']}  {d['elapsed_s']} s  {d['mb_per_s']} MB/s"
        )
        if not d["sessions"]:
            failed.append("ingest (no session found)")
        click.echo("\n== sessions")
        if not _run(["sessions", "--db", str(db)]):
            failed.append("sessions")
        sid = _busiest_session(db)
        if sid is None:
            failed.append("tree (no session has agents)")
        else:
            click.echo(f"\n== tree {sid}")
            if not _run(["tree", sid, "--db", str(db)]):
                failed.append("tree")
        click.echo("\n== cost")
        if not _run(["cost", "--db", str(db)]):
            failed.append("cost")
    if failed:
        click.echo(f"demo: failed: {', '.join(failed)}", err=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
