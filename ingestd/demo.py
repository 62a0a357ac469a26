"""``make demo``: ingest a projects tree into a temporary database and show what came out.

Usage: ``python -m ingestd.demo [CORPUS_DIR]`` (default ``../shared/corpus/claude-projects``, else the
bundled ``fixtures/projects`` tree). Prints the ingest summary, the sessions, the agent tree of the
session with the most agents, and the cost summary, through the report commands when they exist.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from ingestd.commands.ingest import run_ingest
from ingestd.store.connection import connect


def _corpus(argv: list[str]) -> Path:
    """The tree to ingest: the argument (when non-empty), else the real corpus beside the clone, else fixtures."""
    if argv and argv[0]:
        return Path(argv[0])
    repo = Path(__file__).resolve().parent.parent
    shared = repo.parent / "shared" / "corpus" / "claude-projects"
    return shared if shared.is_dir() else repo / "fixtures" / "projects"


def _run(args: list[str]) -> bool:
    from ingestd.cli import cli

    try:
        cli.main(args=args, prog_name="ingestd", standalone_mode=False)
    except SystemExit as e:  # IngestdError already printed its one-line message
        return e.code in (0, None)
    return True


def main(argv: list[str]) -> int:
    """Run the demo; returns the exit status."""
    corpus = _corpus(argv)
    if not corpus.is_dir():
        click.echo(f"demo: no corpus at {corpus}", err=True)
        return 2
    with tempfile.TemporaryDirectory(prefix="ingestd-demo-") as tmp:
        db = Path(tmp) / "demo.db"
        click.echo(f"== ingest {corpus}")
        s = run_ingest(db, (corpus,), show_progress=sys.stderr.isatty())
        d = s.to_json()
        click.echo(
            f"files {d['files']}  lines {d['lines']}  sessions {d['sessions']}  agents {d['agents']}  "
            f"messages {d['messages']}  {d['elapsed_s']} s  {d['mb_per_s']} MB/s"
        )
        conn = connect(db)
        click.echo("\n== sessions")
        if not _run(["sessions", "--db", str(db)]):
            for row in conn.execute("SELECT id, project_path, started_at, status FROM sessions ORDER BY started_at"):
                click.echo("  " + "  ".join(str(v) for v in row))
        top = conn.execute(
            "SELECT a.session_id FROM agents a GROUP BY a.session_id ORDER BY"
            " (SELECT count(*) FROM orchestration_edges e WHERE e.session_id = a.session_id) DESC,"
            " count(*) DESC, a.session_id LIMIT 1"
        ).fetchall()
        if top:
            sid = str(top[0][0])
            click.echo(f"\n== tree {sid}")
            if not _run(["tree", sid, "--db", str(db)]):
                for row in conn.execute(
                    "SELECT id, type, subagent_type, status, parent_agent_id FROM agents WHERE session_id = ?"
                    " ORDER BY first_seen_at",
                    (sid,),
                ):
                    click.echo("  " + "  ".join(str(v) for v in row))
        click.echo("\n== cost")
        if not _run(["cost", "--db", str(db)]):
            for row in conn.execute("SELECT bucket, sum(tokens) FROM token_usage GROUP BY bucket ORDER BY bucket"):
                click.echo(f"  {row[0]:<16} {row[1]:>14,}")
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
