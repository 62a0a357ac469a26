"""``ingestd tree SESSION``: the agent tree of one session."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ingestd.commands._common import (
    db_option,
    emit_json,
    json_option,
    note_stale,
    open_reader,
    store_option,
)
from ingestd.report.prompts import prompts_report
from ingestd.report.tree import tree_report
from ingestd.report.window import resolve_zone


def register(cli: click.Group) -> None:
    @cli.command("tree")
    @db_option
    @store_option
    @click.argument("session")
    @click.option("--tz", "tz_name", default=None, help="IANA time zone for times [default: the machine's].")
    @click.option(
        "--by",
        type=click.Choice(["agent", "prompt"]),
        default="agent",
        show_default=True,
        help="agent: the agent tree; prompt: the session's work grouped by the user prompt it answered.",
    )
    @json_option
    def tree_cmd(
        db_path: Path | None, store_url: str | None, session: str, tz_name: str | None, by: str, as_json: bool
    ) -> None:
        """The agent tree of SESSION (an id or a unique prefix of one).

        Each agent shows its subagent type, status, outcome cause, first/last seen, tool calls, and
        tokens and cost of the agent alone and of its subtree; each link shows its provenance (how
        the parent was found). Orphans (no parent evidence) are listed under the session. Claude
        Code's own totals (its cost-state record, its status line's estimate) are shown beside
        ingestd's, never added. With --by prompt: each prompt of the session with the subagents,
        tool calls, tokens and cost of the work it started.
        """
        env = dict(os.environ)
        zone = resolve_zone(tz_name, env)
        conn, stale = open_reader(db_path, store_url, refuse_stale=True)
        doc = prompts_report(conn, session) if by == "prompt" else tree_report(conn, session)
        if as_json:
            emit_json(note_stale(doc, stale))
            return
        from rich.console import Console

        from ingestd.report.treeview import render_prompts, render_tree

        if by == "prompt":
            render_prompts(Console(), doc, zone, store=store_url is not None)
            return
        render_tree(Console(), doc, zone, env.get("HOME"), store=store_url is not None)
