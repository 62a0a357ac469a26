"""A ``$TZ`` that names no IANA zone (a POSIX rule such as ``JST-9``, ``UTC+3``, a typo) is not
used silently: one warning on stderr names it, and the report says which zone it used; ``--tz``
with such a value is refused (``window.local_zone``, ``window.resolve_zone``).

Regression: ``TZ=JST-9 ingestd sessions`` showed UTC times without a word.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ingestd.errors import ConfigError
from ingestd.report import window


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(window, "_WARNED_TZ", set())


@pytest.mark.parametrize("tz", ["JST-9", "UTC+3", "Nowhere/Bogus", ":JST-9"])
def test_an_unusable_tz_is_warned_of_once(tmp_path: Path, capsys: pytest.CaptureFixture[str], tz: str) -> None:
    none = tmp_path / "no-localtime"
    for _ in range(3):
        assert window.local_zone({"TZ": tz}, none).name == "UTC"
    err = capsys.readouterr().err
    assert err.count("warning") == 1
    assert f"TZ={tz!r} is not an IANA time zone name" in err


def test_an_iana_tz_is_used_without_a_word(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert window.local_zone({"TZ": "Asia/Tokyo"}, tmp_path / "x").name == "Asia/Tokyo"
    assert window.local_zone({}, tmp_path / "x").name == "UTC"
    assert capsys.readouterr().err == ""


def test_an_explicit_posix_tz_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown time zone 'JST-9'"):
        window.resolve_zone("JST-9", {})


TOKYO = Path("/usr/share/zoneinfo/Asia/Tokyo")
needs_tokyo = pytest.mark.skipif(not TOKYO.is_file(), reason="no system zoneinfo file for Asia/Tokyo")


@needs_tokyo
@pytest.mark.parametrize("tz", [str(TOKYO), f":{TOKYO}"])
def test_an_absolute_zoneinfo_path_is_its_zone(tmp_path: Path, capsys: pytest.CaptureFixture[str], tz: str) -> None:
    """Regression: glibc's file forms of TZ showed UTC while `date` showed JST."""
    assert window.local_zone({"TZ": tz}, tmp_path / "no-localtime").name == "Asia/Tokyo"
    assert capsys.readouterr().err == ""


@needs_tokyo
def test_colon_localtime_is_the_machines_zone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: TZ=:/etc/localtime warned on every command."""
    localtime = tmp_path / "localtime"
    localtime.symlink_to(TOKYO)
    assert window.local_zone({"TZ": f":{localtime}"}, localtime).name == "Asia/Tokyo"
    assert window.local_zone({"TZ": ":/etc/localtime"}).name == window.local_zone({}).name
    assert capsys.readouterr().err == ""


@needs_tokyo
def test_a_zone_file_outside_zoneinfo_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "my-zone"
    copy.write_bytes(TOKYO.read_bytes())
    zone = window.local_zone({"TZ": f":{copy}"}, tmp_path / "no-localtime")
    assert zone.name == str(copy)
    assert zone.tz.utcoffset(datetime(2026, 12, 1, tzinfo=UTC)) == timedelta(hours=9)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("tz", ["/no/such/zone", ":/no/such/zone", "NOT-A-ZONE"])
def test_an_absolute_path_that_is_no_zone_is_warned_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tz: str
) -> None:
    if tz == "NOT-A-ZONE":
        tz = str(tmp_path / "text")
        Path(tz).write_text("not a TZif file\n")
    assert window.local_zone({"TZ": tz}, tmp_path / "no-localtime").name == "UTC"
    assert f"TZ={tz!r}" in capsys.readouterr().err
