"""The zstd dictionary of the log's payloads: its parameters and which lines it is trained on
(SPEC §11; ``ingestd.store.payload`` trains it inside the writer's transaction, stores and uses it).

Pure: no database, no clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ingestd.core.records import NewLogRow

# zstd level 3 (zstd's default): with the dictionary, level 1 gives 3.5x and level 6 4.0x at
# 3x the CPU (measured on the corpus: CHANGELOG.md, "Measured").
LEVEL = 3
# The dictionary: zstd's recommended size, trained on the first lines (more lines or a bigger
# dictionary did not help on the corpus, and training time grows with both). Fixed cover
# parameters (segment k, d-mers d) instead of zstd's search over them: 0.1-0.25 s of CPU
# instead of 0.5-1.1 s for the same ratio within 1% (CHANGELOG.md, "Measured").
DICT_BYTES = 112_640
TRAIN_K = 1024
TRAIN_D = 8
TRAIN_ROWS = 2000
TRAIN_MIN_ROWS = 1000
TRAIN_MAX_BYTES = 16 * 1024 * 1024


def dictionary_id(dictionary: bytes) -> int:
    """The codec id a new dictionary gets unless a database already holds it (``_dictionary_id``):
    derived from its bytes, >= 2, 31 bits. Pure."""
    return 2 + int.from_bytes(hashlib.blake2b(dictionary, digest_size=4).digest(), "big") % (2**31 - 2)


def sample_rows(rows: Sequence[NewLogRow], count: int = 0, size: int = 0) -> list[NewLogRow]:
    """The batch's rows a dictionary is trained on after ``count`` stored lines of ``size`` bytes:
    its lines (not ``ingestd`` rows) in order, while fewer than ``TRAIN_ROWS`` in all and under
    ``TRAIN_MAX_BYTES``. Pure."""
    out: list[NewLogRow] = []
    for r in rows:
        if r.source == "ingestd":
            continue
        if count + len(out) >= TRAIN_ROWS or size >= TRAIN_MAX_BYTES:
            break
        out.append(r)
        size += len(r.payload)
    return out
