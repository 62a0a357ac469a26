"""Canonical UTC instants (SPEC §5.4): ``YYYY-MM-DDTHH:MM:SS.sssZ``.

The same rule as the database guard triggers in ``migrations/0002``: a bare date
or a date-time with ``Z`` or a ``±HH:MM`` offset is admitted and canonicalised;
anything else (naive date-times included: they name no instant) is refused.
Text comparison of canonical spellings equals time comparison.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_ADMIT = re.compile(
    r"^\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2}))?$"
)


def parse(value: object) -> datetime | None:
    """Parse an admitted spelling into an aware UTC datetime, else None."""
    if not isinstance(value, str) or not _ADMIT.match(value):
        return None
    text = value.replace(" ", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    if len(text) == 10:
        text += "T00:00:00+00:00"
    # fromisoformat takes at most 6 fractional digits; keep milliseconds precision.
    m = re.match(r"^(.*?\d{2}:\d{2}:\d{2})\.(\d+)(.*)$", text)
    if m:
        text = f"{m.group(1)}.{(m.group(2) + '000000')[:6]}{m.group(3)}"
    try:
        # an offset can carry an instant past year 9999 or before year 1 (OverflowError)
        return datetime.fromisoformat(text).astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def format_utc(dt: datetime) -> str:
    """Spell an aware datetime canonically (milliseconds, truncated, ``Z``)."""
    dt = dt.astimezone(UTC)
    if dt.year >= 1000:
        # isoformat truncates to milliseconds too, at a third of strftime's cost (a hook pays this)
        return dt.isoformat(timespec="milliseconds")[:-6] + "Z"
    # strftime's %Y does not pad years below 1000 (glibc), isoformat does: keep that spelling
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def canonical(value: object) -> str | None:
    """The canonical spelling of ``value``, or None when it is not an admitted instant.

    Examples:
        ``2025-01-02T03:04:05Z`` → ``2025-01-02T03:04:05.000Z``;
        ``2025-01-02T05:04:05.5+02:00`` → ``2025-01-02T03:04:05.500Z``;
        ``2025-01-02`` → ``2025-01-02T00:00:00.000Z``; ``2025-01-02T03:04:05`` → None.
    """
    # Fast path: Claude Code writes this spelling already (FORMATS.md §1.1).
    if (
        isinstance(value, str)
        and len(value) == 24
        and value.endswith("Z")
        and value[10] == "T"
        and _ADMIT.match(value)
        and parse(value) is not None
    ):
        return value
    dt = parse(value)
    return None if dt is None else format_utc(dt)


def from_epoch_ns(ns: int) -> str:
    """Canonical spelling of a POSIX time in nanoseconds (the shell passes clock readings in)."""
    return format_utc(datetime.fromtimestamp(ns / 1e9, tz=UTC))
