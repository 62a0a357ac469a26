"""``ingestd replay [--db PATH] [--json]``: double replay from the log, compared with the live projections."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ingestd import files
from ingestd.commands._common import (
    db_option,
    emit_json,
    json_option,
    open_db,
    resolve_db,
    store_connection,
    store_option,
)
from ingestd.errors import CheckFailed, ConfigError
from ingestd.projection.replay import ReplayResult, replay, total_rows
from ingestd.projection.reproject import StaleProjection
from ingestd.store.connection import on_read_only_media


def _print(result: ReplayResult) -> None:
    from rich.console import Console
    from rich.table import Table

    comp = result.comparison
    console = Console()
    table = Table("table", *[f"rows {s}" for s in comp.sides], "equal")
    for t, ds in comp.dumps.items():
        equal = len({d.digest for d in ds}) == 1
        table.add_row(t, *[str(d.rows) for d in ds], "yes" if equal else "[bold red]NO[/]")
    console.print(table)
    console.print(
        f"log rows {result.log_rows}, prune receipts honoured {result.receipts}; "
        + ", ".join(f"{k} {v:.2f} s" for k, v in result.elapsed_s.items())
    )
    for pair, diffs in comp.differences.items():
        console.print(f"[bold red]{pair}[/]: first {len(diffs)} differing rows")
        for d in diffs:
            console.print(f"  key {d.key}", markup=False)
            console.print(f"    {comp_side(pair, 0)}: {d.left}", markup=False)
            console.print(f"    {comp_side(pair, 1)}: {d.right}", markup=False)


def comp_side(pair: str, i: int) -> str:
    """``"t: a vs b"`` → ``a`` or ``b``."""
    return pair.split(": ", 1)[1].split(" vs ")[i]


@click.command("replay")
@db_option
@store_option
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the snapshot and the two rebuilds go [default: next to the database].",
)
@json_option
def replay_cmd(db_path: Path | None, store_url: str | None, workdir: Path | None, as_json: bool) -> None:
    """Rebuild every projection from the log twice and compare with the live database.

    Exit 0 when the three agree; exit 1 printing the first differing rows per table.
    With --store: the central store's log is re-folded twice inside a transaction that is
    rolled back, and compared with its live projections.
    """
    if store_url:
        from ingestd.central.check import replay as central_replay

        outcome = central_replay(store_connection(store_url))
        if as_json:
            emit_json(outcome.to_json())
        else:
            for t, d in outcome.to_json()["tables"].items():
                click.echo(f"{t}: rows {d['rows']} {'equal' if d['equal'] else 'DIFFERENT'}")
            click.echo(f"log rows {outcome.log_rows}")
        if not outcome.ok:
            raise CheckFailed("central replay mismatch in " + ", ".join(outcome.differing))
        return
    path = resolve_db(db_path)
    opened = open_db(path, "read")  # there, and migrated: a log of an older schema is not replayed
    conn, stale = opened.db, opened.stale
    conn.close()
    if workdir is None and on_read_only_media(path):
        raise ConfigError(
            f"{path} is on a read-only file system, where the replay's copies cannot go: pass --workdir DIR"
            " on a writable one"
        )
    # the live database is opened to write (its snapshot is taken through WAL) and a copy of the
    # whole log goes into the work directory: both are checked as `ingest` checks the database
    # the default work directory, the database's, is checked with it; every finding in one refusal
    extra = files.dir_problems(workdir) if workdir is not None else []
    files.require_safe(files.store_problems(path) + extra)
    bar = sys.stderr.isatty() and not as_json
    result = _replay_with_bar(path, workdir) if bar else replay(path, workdir=workdir)
    if as_json:
        emit_json(result.to_json())
    else:
        _print(result)
    if not result.comparison.ok:
        raise CheckFailed(
            "replay mismatch in "
            + ", ".join(sorted({k.split(":")[0] for k in result.comparison.differences}))
            + ": "
            + _mismatch_hint(stale)
        )


def _replay_with_bar(path: Path, workdir: Path | None) -> ReplayResult:
    """``replay`` with a progress bar on stderr (a terminal), its phases and rows as they go."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    ) as bar:
        task = bar.add_task("replay", total=total_rows(path) or None)
        return replay(
            path,
            workdir=workdir,
            on_phase=lambda name: bar.update(task, description=name),
            on_rows=lambda n: bar.advance(task, n),
        )


def _mismatch_hint(stale: StaleProjection | None) -> str:
    """What a mismatch most likely means and what to run next, given the live projections'
    staleness as the replay found it when it opened the database (``open_db``)."""
    if stale is not None:
        return f"{stale.message()}, then replay again"
    return (
        "the live projections differ from a rebuild of the log under the same rules, a bug in ingestd: "
        "the first differing rows are above (`--json` gives them all); `ingestd verify` checks the rest"
    )


def register(cli: click.Group) -> None:
    """Add the command to the CLI (``ingestd.cli`` finds this function)."""
    cli.add_command(replay_cmd)
