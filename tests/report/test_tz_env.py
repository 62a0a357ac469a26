"""A ``$TZ`` that names no IANA zone (a POSIX rule such as ``JST-9``, ``UTC+3``, a typo) is not
used silently: one warning on stderr names it, and the report says which zone it used; ``--tz``
with such a value is refused (``window.local_zone``, ``window.resolve_zone``).

Regression (breaker3): ``TZ=JST-9 ingestd sessions`` showed UTC times without a word.
"""

from __future__ import annotations

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
