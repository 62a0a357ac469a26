"""The zstd dictionary of the log's payloads: which lines it is trained on and training it ahead
of the write transaction (SPEC §11; ``ingestd.store.payload`` stores and uses it).

Pure apart from zstd: no database, no clock. ``payload._train`` trains inside the writer's
transaction; ``pretrain`` gives the same bytes from the same samples on any thread beforehand
(``ingestd.ingest.ahead``), and ``ahead_dictionary`` says when those bytes may be used.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import zstandard

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


def settled(samples: Sequence[NewLogRow]) -> bool:
    """Whether ``sample_rows`` of a batch's first rows can no longer change as rows are added. Pure."""
    return len(samples) >= TRAIN_ROWS or sum(len(r.payload) for r in samples) >= TRAIN_MAX_BYTES


@dataclass(frozen=True, slots=True)
class Pretrained:
    """A dictionary trained ahead of the write transaction from a batch's own lines (``pretrain``).

    Attributes:
        samples: the rows trained on (``sample_rows`` of the batch), checked by identity.
        dictionary: bytes, or None when training failed (the writer then tries itself).
    """

    samples: tuple[NewLogRow, ...]
    dictionary: bytes | None


def pretrain(samples: Sequence[NewLogRow]) -> Pretrained:
    """Train the dictionary on ``samples`` (``sample_rows`` of a first batch) as ``_train`` would
    over a log that holds no line yet. Any thread (zstd releases the GIL while it trains); touches
    no database. ``_train`` stores it only when its own samples are exactly these rows."""
    try:
        trained = zstandard.train_dictionary(
            DICT_BYTES, cast(Any, [r.payload for r in samples]), k=TRAIN_K, d=TRAIN_D, level=LEVEL
        )
    except zstandard.ZstdError:
        return Pretrained(tuple(samples), None)
    return Pretrained(tuple(samples), trained.as_bytes())


def ahead_dictionary(ahead: Pretrained | None, batch: list[NewLogRow], n_stored: int) -> bytes | None:
    """``ahead``'s dictionary when it was trained on exactly the samples ``_train`` has (the same
    row objects, no stored line among them), else None. Training is deterministic for the same
    samples and parameters, so the bytes are those training here would give."""
    if ahead is None or ahead.dictionary is None or n_stored:
        return None
    return ahead.dictionary if same_rows(ahead.samples, batch) else None


def same_rows(a: Sequence[NewLogRow], b: Sequence[NewLogRow]) -> bool:
    """Whether ``a`` and ``b`` are the same row objects in the same order (work made ahead for a
    batch is used only for exactly that batch). Pure."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))
