"""Time windows and local days for reports (SPEC §5.4).

The rollup is keyed by UTC quarter-hour ``slot`` (``YYYY-MM-DDTHH:MMZ``). Every modern time zone's
offset is a multiple of 15 minutes, so each slot lies in exactly one local day of any zone and a
local day is an exact union of slots, daylight-saving days (23 or 25 hours) included.

``--since`` / ``--until`` accept:

- a date ``YYYY-MM-DD``: the local day in the report's zone (``--since`` from its first instant,
  ``--until`` through its last: the day is included);
- a local date-time ``YYYY-MM-DDTHH:MM[:SS]`` (in the report's zone);
- a zoned instant (``...Z`` or ``...+02:00``);
- a relative span before ``now``: ``90m``, ``12h``, ``7d``, ``2w``.

Usage is counted by quarter-hour slot, so the bounds are widened to whole slots (``since`` floored,
``until`` ceiled); the widened bounds are what reports echo back.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import TZPATH, ZoneInfo, ZoneInfoNotFoundError

from ingestd.core.timefmt import format_utc, parse
from ingestd.errors import ConfigError, IngestdError
from ingestd.files import read_capped

SLOT_MINUTES = 15
TZ_MAX_BYTES = 1 << 20  # a zone file is a few KiB; a larger one (a wrong TZ=) is no zone
_DAY_WORDS = {"today": 0, "yesterday": 1}
_RELATIVE = re.compile(r"^(\d+)([mhdw])$")
_LOCAL = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True, slots=True)
class Zone:
    """A report's time zone.

    Attributes:
        name: the IANA name shown to the user (``"localtime"`` when the machine's zone has no name).
        tz: the tzinfo used for conversions.
    """

    name: str
    tz: tzinfo


_WARNED_TZ: set[str] = set()


def _warn_tz(value: str) -> None:
    """Say once a process, on stderr, that ``$TZ`` is not used (a report's times would silently be another zone's)."""
    if value in _WARNED_TZ:
        return
    _WARNED_TZ.add(value)
    sys.stderr.write(
        f"ingestd: warning: TZ={value!r} is not an IANA time zone name (POSIX rules such as JST-9 are not"
        " read): times are shown in the machine's zone (/etc/localtime, else UTC); set TZ to a name such as"
        " Asia/Tokyo or pass --tz\n"
    )


def local_zone(env: Mapping[str, str], localtime: Path = Path("/etc/localtime")) -> Zone:
    """The machine's zone: ``$TZ`` when it names a zone, else ``/etc/localtime``, else UTC.

    ``$TZ`` is read as glibc reads it: an optional leading ``:``, then an IANA name (``Asia/Tokyo``)
    or an absolute zoneinfo file (``/usr/share/zoneinfo/Asia/Tokyo``: named by its key under a
    ``zoneinfo.TZPATH`` entry, else read as a file; ``:/etc/localtime``: the machine's zone).
    A ``$TZ`` that is set but names no zone (a POSIX rule such as ``JST-9`` or ``UTC+3``, a typo,
    a file that is not a zone) is not used: a warning naming it goes to stderr, once a process.
    """
    value = env.get("TZ", "")
    name = value[1:] if value.startswith(":") else value
    if name:
        zone = _tz_zone(name, localtime)
        if zone is not None:
            return zone
        _warn_tz(value)
    return _machine_zone(localtime)


def _zoneinfo_key(path: str) -> str | None:
    """The IANA key of a zoneinfo file's path (under a ``TZPATH`` entry or a ``zoneinfo/`` folder), or None."""
    for base in TZPATH:
        prefix = base.rstrip("/") + "/"
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path.split("zoneinfo/", 1)[1] if "zoneinfo/" in path else None


def _tz_zone(name: str, localtime: Path) -> Zone | None:
    """The zone ``$TZ`` (its leading ``:`` removed) names, or None when it names none."""
    if not name.startswith("/"):
        try:
            return Zone(name, ZoneInfo(name))
        except (ZoneInfoNotFoundError, ValueError):
            return None
    if Path(name) == localtime:
        return _machine_zone(localtime)
    for path in (name, os.path.realpath(name)):
        key = _zoneinfo_key(path)
        if key:
            try:
                return Zone(key, ZoneInfo(key))
            except (ZoneInfoNotFoundError, ValueError):
                pass
    try:
        return Zone(name, ZoneInfo.from_file(io.BytesIO(read_capped(Path(name), TZ_MAX_BYTES, "zone file")), key=name))
    except (OSError, ValueError, IngestdError):
        return None


def _machine_zone(localtime: Path) -> Zone:
    """``localtime`` (a link into zoneinfo: its key; else the file as ``"localtime"``), else UTC."""
    try:
        key = _zoneinfo_key(os.readlink(localtime))
        if key:
            return Zone(key, ZoneInfo(key))
    except (OSError, ZoneInfoNotFoundError, ValueError):
        pass
    try:
        data = read_capped(localtime, TZ_MAX_BYTES, "zone file")
        return Zone("localtime", ZoneInfo.from_file(io.BytesIO(data), key="localtime"))
    except (OSError, ValueError, IngestdError):
        return Zone("UTC", ZoneInfo("UTC"))


def resolve_zone(name: str | None, env: Mapping[str, str]) -> Zone:
    """``name`` as an IANA zone, or the machine's zone when None.

    Raises:
        ConfigError: ``name`` is not a zone ``zoneinfo`` knows.
    """
    if name is None:
        return local_zone(env)
    try:
        return Zone(name, ZoneInfo(name))
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise ConfigError(f"unknown time zone {name!r}: give an IANA name such as Europe/Paris or UTC") from e


def _floor_slot(dt: datetime) -> datetime:
    dt = dt.astimezone(UTC).replace(second=0, microsecond=0)
    return dt - timedelta(minutes=dt.minute % SLOT_MINUTES)


def _ceil_slot(dt: datetime) -> datetime:
    floor = _floor_slot(dt)
    return floor if floor == dt.astimezone(UTC) else floor + timedelta(minutes=SLOT_MINUTES)


def slot_text(dt: datetime) -> str:
    """The rollup's slot spelling of an aligned UTC instant: ``YYYY-MM-DDTHH:MMZ``."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def _local_midnight(d: date, zone: Zone) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=zone.tz).astimezone(UTC)


def parse_bound(text: str, zone: Zone, now: datetime, *, end: bool, name: str = "") -> datetime:
    """One ``--since``/``--until`` value as an aware UTC instant (not yet slot-aligned).

    Args:
        name: how the caller spells the parameter (``--since``, ``since``), to start error messages.

    Raises:
        ConfigError: the text is none of the accepted spellings.
    """
    at = f"{name}: " if name else ""
    t = text.strip()
    m = _RELATIVE.match(t)
    if m:
        return now.astimezone(UTC) - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    if t.lower() in _DAY_WORDS:
        # A local day of the zone, like YYYY-MM-DD: --until today includes today.
        d = now.astimezone(zone.tz).date() - timedelta(days=_DAY_WORDS[t.lower()])
        return _local_midnight(d + timedelta(days=1) if end else d, zone)
    if re.match(r"^\d{4}-\d{2}-\d{2}$", t):
        try:
            d = date.fromisoformat(t)
        except ValueError as e:
            raise ConfigError(f"{at}not a date: {text!r}", parameter=name) from e
        return _local_midnight(d + timedelta(days=1) if end else d, zone)
    if _LOCAL.match(t):
        try:
            return datetime.fromisoformat(t.replace(" ", "T")).replace(tzinfo=zone.tz).astimezone(UTC)
        except ValueError as e:
            raise ConfigError(f"{at}not a date-time: {text!r}", parameter=name) from e
    dt = parse(t)
    if dt is None:
        raise ConfigError(
            f"{at}cannot read {text!r} as a time: give today, yesterday, YYYY-MM-DD, YYYY-MM-DDTHH:MM,"
            " a zoned instant, or 7d / 12h",
            parameter=name,
        )
    return dt


@dataclass(frozen=True, slots=True)
class Window:
    """A half-open window ``[since, until)`` aligned to quarter-hour slots; None means unbounded.

    Attributes:
        since: aligned aware UTC instant or None.
        until: aligned aware UTC instant or None (exclusive).
    """

    since: datetime | None
    until: datetime | None

    @property
    def since_slot(self) -> str | None:
        return None if self.since is None else slot_text(self.since)

    @property
    def until_slot(self) -> str | None:
        return None if self.until is None else slot_text(self.until)

    @property
    def since_utc(self) -> str | None:
        """Canonical UTC spelling of ``since`` (for ``occurred_at`` comparisons and JSON)."""
        return None if self.since is None else format_utc(self.since)

    @property
    def until_utc(self) -> str | None:
        return None if self.until is None else format_utc(self.until)

    def to_json(self) -> dict[str, str | None]:
        return {"since": self.since_utc, "until": self.until_utc}


CLI_NAMES = ("--since", "--until")
API_NAMES = ("since", "until")


def make_window(
    since: str | None, until: str | None, zone: Zone, now: datetime, *, names: tuple[str, str] = CLI_NAMES
) -> Window:
    """Parse and slot-align ``--since``/``--until``.

    Args:
        names: how the caller spells the two parameters in messages: ``CLI_NAMES`` (options) or
            ``API_NAMES`` (query parameters).

    Raises:
        ConfigError: a bound cannot be read, or ``since`` is not before ``until``.
    """
    s = None if since is None else _bounded(since, zone, now, end=False, name=names[0])
    u = None if until is None else _bounded(until, zone, now, end=True, name=names[1])
    if s is not None and u is not None and s >= u:
        # Name the bounds as the user gave them: `until` is held as its exclusive end, which for
        # a day is the next day's start and, printed alone, reads like a contradiction.
        raise ConfigError(
            f"{names[0]} ({since}) must be before {names[1]} ({until}): "
            f"from {format_utc(s)} to {format_utc(u)} (exclusive) is an empty window"
        )
    return Window(s, u)


def _bounded(text: str, zone: Zone, now: datetime, *, end: bool, name: str) -> datetime:
    """``parse_bound`` slot-aligned, with a date past the calendar's ends (``9999-12-31`` as an
    exclusive end, ``999999999h``) refused as a ConfigError instead of an OverflowError."""
    try:
        dt = parse_bound(text, zone, now, end=end, name=name)
        return _ceil_slot(dt) if end else _floor_slot(dt)
    except OverflowError:
        raise ConfigError(
            f"{name}: {text!r} is outside the dates this tool can represent (years 1 to 9999)", parameter=name
        ) from None


def slot_time(slot: str) -> datetime:
    """The aware UTC start of a slot ``YYYY-MM-DDTHH:MMZ``."""
    return datetime(int(slot[0:4]), int(slot[5:7]), int(slot[8:10]), int(slot[11:13]), int(slot[14:16]), tzinfo=UTC)


def slot_day(slot: str, zone: Zone, cache: dict[str, str]) -> str:
    """The local date (``YYYY-MM-DD`` in ``zone``) of a UTC slot ``YYYY-MM-DDTHH:MMZ``."""
    day = cache.get(slot)
    if day is None:
        day = slot_time(slot).astimezone(zone.tz).date().isoformat()
        cache[slot] = day
    return day


def range_clauses(since_sql: str, since: str | None, until_sql: str, until: str | None) -> tuple[list[str], list[Any]]:
    """SQL conditions ``since_sql >= since`` and ``until_sql < until`` for the bounds given. Pure.

    Returns:
        (conditions to AND together, their parameters); both empty for an open window.
    """
    where: list[str] = []
    params: list[Any] = []
    if since is not None:
        where.append(f"{since_sql} >= ?")
        params.append(since)
    if until is not None:
        where.append(f"{until_sql} < ?")
        params.append(until)
    return where, params
