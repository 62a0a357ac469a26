"""``ingestd doctor [--json]``: what is wrong and what to do (``ingestd.claude.doctor``)."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.claude import doctor
from ingestd.claude.paths import claude_config_dir
from ingestd.commands._common import db_option, default_projects, emit_json, json_option, resolve_db
from ingestd.report.short import hang

MARKS = {doctor.OK: "ok", doctor.NOTE: "note", doctor.ACTION: "fix"}


def register(cli: click.Group) -> None:
    @cli.command("doctor")
    @db_option
    @click.option(
        "--projects",
        "roots",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Projects root to check (repeatable) [default: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects].",
    )
    @json_option
    def doctor_cmd(db_path: Path | None, roots: tuple[Path, ...], as_json: bool) -> None:
        """One screen of what is wrong and what to do: the daemon, Claude Code's hooks (missing,
        doubled, blocked by managed settings), the status line, what cleanupPeriodDays will delete
        and whether the log holds it, the projects roots, the disk, pending migrations.
        Exit 1 when something needs action. Changes nothing."""
        env = dict(os.environ)
        findings = doctor.gather(
            db_path=resolve_db(db_path),
            roots=list(roots) or default_projects(env),
            config_dir=claude_config_dir(env),
            cwd=Path.cwd(),
            now=datetime.now(UTC),
            managed_base=doctor.platform_managed_base(),
        )
        if as_json:
            emit_json(doctor.to_json(findings))
        else:
            width = shutil.get_terminal_size().columns
            for f in findings:
                lines = hang(f"{MARKS[f.level]:<5} {f.check:<17} ", f.message, width)
                if f.fix and f.level != doctor.OK:
                    lines += hang(f"{'':<23} -> ", f.fix, width)
                click.echo("\n".join(lines))
        if any(f.level == doctor.ACTION for f in findings):
            raise SystemExit(1)
