"""Which ``ingestd`` commands exist right now (other parts of the product are still being built)."""

from __future__ import annotations

import functools
import subprocess

from bench.proc import REPO, ingestd_exe


@functools.cache
def has_command(name: str) -> bool:
    """True when ``ingestd NAME --help`` exits 0."""
    try:
        r = subprocess.run([ingestd_exe(), name, "--help"], capture_output=True, cwd=REPO, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


NOT_AVAILABLE = "not available yet"
