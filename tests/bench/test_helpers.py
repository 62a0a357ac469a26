"""The benchmark harness's pure helpers: summaries, percentiles, verdicts, tables, ground-truth check, profiles,
the package compiled before it is measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.proc import compile_package
from bench.profile import hotspots_from_collapsed
from bench.stats import Summary, fmt_num, fmt_summary, percentile, summarize, verdict
from bench.table import Row, markdown_table
from bench.truth import check_totals

TRUTH = {
    "final": {
        "total": {
            "input_tokens": 10,
            "output_tokens": 20,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 40,
            "messages": 2,
        }
    }
}


def test_summarize_median_and_range() -> None:
    assert summarize([3.0, 1.0, 2.0]) == Summary(2.0, 1.0, 3.0, 3)
    assert summarize([1.0, 4.0]).median == 2.5
    with pytest.raises(ValueError):
        summarize([])


def test_percentile_nearest_rank() -> None:
    samples = [float(x) for x in range(1, 101)]
    assert percentile(samples, 50) == 50.0
    assert percentile(samples, 95) == 95.0
    assert percentile(samples, 100) == 100.0
    assert percentile([7.0], 99) == 7.0
    with pytest.raises(ValueError):
        percentile(samples, 101)


def test_formatting_and_verdict() -> None:
    assert fmt_num(1234.5) == "1,234"
    assert fmt_num(0.01234) == "0.0123"
    assert fmt_summary(Summary(0.002, 0.001, 0.003, 3), "ms", 1000) == "2.00 ms (1.00–3.00, 3 runs)"
    assert fmt_summary(Summary(5.0, 5.0, 5.0, 1), "s") == "5.00 s (1 run)"
    assert verdict(5.0, 5.0) == "meets"
    assert verdict(5.1, 5.0) == "misses"
    assert verdict(9000, 8000, lower_is_better=False) == "meets"


def test_markdown_table_marks_misses_and_escapes_pipes() -> None:
    text = markdown_table([Row("a|b", "1 s", "≤ 5 s", "meets"), Row("c", "9 s", "≤ 5 s", "misses", "fsync")])
    lines = text.splitlines()
    assert lines[0].startswith("| measurement | figure |")
    assert "a\\|b" in lines[2]
    assert "**misses**" in lines[3] and "fsync" in lines[3]


def test_check_totals_sums_write_buckets() -> None:
    rows = [("input", 10), ("output", 20), ("cache_read", 30), ("cache_write_5m", 25), ("cache_write_1h", 15)]
    chk = check_totals(TRUTH, rows)
    assert chk.ok and chk.differences() == {}


def test_check_totals_reports_differences() -> None:
    rows = [("input", 10), ("output", 21), ("cache_read", 30), ("cache_write_5m", 40)]
    chk = check_totals(TRUTH, rows)
    assert not chk.ok
    assert chk.differences() == {"output_tokens": 1}
    assert not check_totals(TRUTH, []).ok


def test_hotspots_from_collapsed_stacks() -> None:
    lines = [
        'process 1:"x";run (a.py:1);parse (b.py:10) 6',
        'process 1:"x";run (a.py:2);write (c.py:5) 3',
        "run (a.py:1) 1",
        "garbage",
    ]
    h = hotspots_from_collapsed(lines)
    assert h.samples == 10
    assert h.self_top[0] == ("parse (b.py)", 0.6)
    assert dict(h.inclusive_top)["run (a.py)"] == 1.0


def test_sidebyside_table_ratios_and_splice(tmp_path: Path) -> None:
    from bench.corpus import Corpus
    from bench.sidebyside import BEGIN, END, Figures, SideBySide, render, section_of, splice

    corpus = Corpus("c1", tmp_path, tmp_path / "projects", 1, 1, {"corpus": {"jsonl_bytes": 1_000_000}})
    res = SideBySide(corpus, 3, floor=[1.0, 2.0, 3.0], floor_cpu=[1.0, 1.0, 1.0], ccusage_note="skipped: no npm")
    res.load = ["1", "2"]
    res.figures["main"] = Figures(
        cold=[8.0, 9.0, 10.0],
        cold_cpu=[5.0] * 3,
        cold_rss=[100.0] * 3,
        restart=[0.2] * 3,
        replay=[12.0] * 3,
        replay_rss=[90.0] * 3,
        cost=[0.1] * 3,
        db_bytes=[1_400_000],
        totals_ok=True,
    )
    res.figures["branch"] = Figures(cold=[4.0] * 3, replay=[5.0] * 3, db_bytes=[400_000], totals_ok=False)
    text = render([res], "cmd", "now")
    assert text.startswith(BEGIN) and text.rstrip().endswith(END)
    assert "| figure | main | branch |" in text
    assert "9.00 s (8.00–10.0), **4.50x**" in text  # median 9 over the floor's median 2
    assert "**2.00x**" in text and "1.25x" in text and "1.33x" in text  # cold 4 / floor 2; replay / cold
    assert "1.40x" in text and "0.40x" in text  # database / corpus
    assert "skipped: no npm" in text and "**differ**" in text
    doc = "# Benchmarks\n\nfigures\n\n<!-- framing: x -->\nframing\n"
    once = splice(doc, text)
    assert once.index(BEGIN) < once.index("<!-- framing:") and section_of(once) == text
    assert splice(once, text.replace("main", "base")).count(BEGIN) == 1


def test_sidebyside_ingesters_take_turns_going_first() -> None:
    from bench.sidebyside import Ingester, turn

    a, b, c = (Ingester(label, (label,)) for label in "abc")
    assert [turn([a, b, c], n) for n in range(3)] == [[a, b, c], [c, b, a], [a, b, c]]


def test_the_package_measured_is_compiled_to_bytecode_first(tmp_path: Path) -> None:
    pkg = tmp_path / "ingestd"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("X = 1\n")
    (pkg / "sub" / "b.py").write_text("Y = 2\n")
    compile_package(tmp_path)
    assert [p.name.split(".")[0] for p in sorted(pkg.rglob("*.pyc"))] == ["a", "b"]
