"""kill -9 of a real ``ingestd serve`` under mixed load, then restart (SPEC §12).

Load: four hook clients, two live transcripts being appended (some lines torn for a moment), and
a history the start-up catch-up is still reading (the backfill). After the last restart: every
delivery that got a 200 is in the log exactly once, every complete transcript line exactly once
and verbatim (no torn line stored, no line lost), and ``ingestd replay`` exits 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.daemon import kill_loop


@pytest.mark.slow  # kill -9 class: make reliability
@pytest.mark.timeout(60)
def test_kill9_twice_under_mixed_load(tmp_path: Path) -> None:
    kill_loop(tmp_path, kills=2, history=(4, 1500), seed=1, up_s=(0.4, 1.5))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_kill9_twenty_two_times_under_mixed_load(tmp_path: Path) -> None:
    kill_loop(tmp_path, kills=22, history=(8, 3000), seed=11, up_s=(0.2, 2.0))
