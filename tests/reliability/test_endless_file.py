"""``truncate -s 2G <root>/-p/big.jsonl`` while the daemon tails ``<root>`` (SPEC §12).

The daemon keeps answering hooks (p99 under 50 ms), its RSS stays under 300 MB, and SIGTERM ends
it within 2 s: framing is one pass with bounded memory, and a shutdown stops the read at its next
chunk. A real ``ingestd serve`` process (``bench.framing.daemon_on_endless_file``, the same
scenario ``make bench`` records in BENCHMARKS.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.framing import daemon_on_endless_file
from bench.stats import percentile


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_2gb_file_without_newline_does_not_hold_the_daemon(tmp_path: Path) -> None:
    base = daemon_on_endless_file(tmp_path / "base", 0, hooks_s=8.0)
    d = daemon_on_endless_file(tmp_path / "big", 2 << 30, hooks_s=8.0)
    assert d.hooks > 50 and d.failed == 0
    # 50 ms on a quiet machine; on a loaded one (shared CI) the same daemon with no file at all
    # is the yardstick: the file may not make hooks more than twice as slow as that
    limit = max(50.0, 2 * percentile(base.latencies_ms, 99))
    assert percentile(d.latencies_ms, 99) < limit, (sorted(d.latencies_ms)[-5:], limit)
    assert d.peak_rss_mb < 300
    assert d.exit_code == 0 and d.sigterm_s < 2
