"""``cost``, ``sessions`` and ``tree`` load no part of the fold: its modules (the fold state, its checks, the
projector) cost a read command's start-up tens of milliseconds of imports it never runs."""

from __future__ import annotations

import subprocess
import sys

FOLD = (
    "ingestd.core.state",
    "ingestd.core.touch",
    "ingestd.core.validate",
    "ingestd.core.projector",
    "ingestd.core.transcript",
)


def test_cost_sessions_and_tree_import_nothing_of_the_fold() -> None:
    code = (
        "import sys\n"
        "import ingestd.cli, ingestd.commands.cost, ingestd.commands.sessions, ingestd.commands.tree\n"
        f"loaded = [m for m in {FOLD!r} if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
