"""The real watcher and the real ingest code on a real directory: append, torn line, truncate, delete."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from ingestd.daemon.config import ServeConfig
from ingestd.daemon.root import TAILER, assemble
from tests.daemon.support import user_line
from tests.hookclient import JSON_HEADERS
from tests.reliability.support import q
from tests.support import until

SID = "11111111-2222-3333-4444-555555555555"


def line(i: int, text: str = "hello") -> bytes:
    return user_line(SID, i, text=text, timestamp=f"2026-01-01T00:00:{i:02d}.000Z")


def offsets(db: Path) -> list[tuple[int, int]]:
    return [
        (r[0], r[1])
        for r in q(db, "SELECT origin_gen, origin_offset FROM events_raw WHERE source = 'jsonl' ORDER BY id")
    ]


async def test_live_transcript_append_torn_truncate_delete(tmp_path: Path, aiohttp_client: Any) -> None:
    root = tmp_path / "projects"
    proj = root / "-tmp-p"
    proj.mkdir(parents=True)
    f = proj / f"{SID}.jsonl"
    f.write_bytes(line(1))  # present before start: the catch-up reads it
    db = tmp_path / "t.db"
    cfg = ServeConfig(db_path=db, projects=(root,), schedule=False, watchdog_interval_s=3600, rescan_interval_s=3600)
    client = await aiohttp_client(assemble(cfg), headers=JSON_HEADERS)
    await until("catch-up", lambda: len(offsets(db)) == 1)

    # append: projected promptly
    t0 = time.monotonic()
    with f.open("ab") as fh:
        fh.write(line(2))
    await until("append", lambda: len(offsets(db)) == 2)
    append_latency = time.monotonic() - t0

    # torn line: held back until its newline arrives
    l3 = line(3)
    tailer = client.app[TAILER]
    seen = tailer.batches_seen
    with f.open("ab") as fh:
        fh.write(l3[:20])
    await until("the torn write to be handled", lambda: tailer.batches_seen > seen)
    assert len(offsets(db)) == 2
    with f.open("ab") as fh:
        fh.write(l3[20:])
    await until("torn line completed", lambda: len(offsets(db)) == 3)
    assert q(db, "SELECT count(*) FROM events_raw WHERE event_type = 'invalid'")[0][0] == 0

    # truncate and rewrite: a new generation, the old rows stay
    f.write_bytes(line(7, "rewritten"))
    await until("rewrite", lambda: any(g == 1 for g, _ in offsets(db)))
    assert q(db, "SELECT count(*) FROM events_raw WHERE event_type = 'file_reset'")[0][0] == 1

    # delete: nothing is deleted from the database
    before = q(db, "SELECT count(*) FROM events_raw")[0][0]
    sessions = q(db, "SELECT id FROM sessions")
    seen = tailer.batches_seen
    f.unlink()
    await until("the deletion to be handled", lambda: tailer.batches_seen > seen)
    assert q(db, "SELECT count(*) FROM events_raw")[0][0] == before
    assert q(db, "SELECT id FROM sessions") == sessions == [(SID,)]
    await client.close()
    assert append_latency < 5.0  # a sanity bound; the 300 ms target is measured by `make bench`


async def test_an_append_landing_just_after_the_catch_up_read_its_file_is_followed(tmp_path: Path) -> None:
    # regression (the benchmark's "append never projected within 5 s"): the watcher used to
    # start after the catch-up, so a line appended in between waited for the next rescan
    from ingestd.daemon.tailer import Tailer

    root = tmp_path / "projects"
    (root / "-tmp-p").mkdir(parents=True)
    f = root / "-tmp-p" / f"{SID}.jsonl"
    f.write_bytes(line(0))
    calls: list[object] = []
    stop = asyncio.Event()

    async def ingest(paths: Any) -> None:
        calls.append(None if paths is None else [Path(p) for p in paths])
        if len(calls) == 1:
            with f.open("ab") as fh:  # the catch-up has read the file; a line lands now
                fh.write(line(1))
        elif paths is not None:
            stop.set()

    tailer = Tailer([root], ingest, rescan_interval_s=3600)
    await asyncio.wait_for(tailer.run(stop), 10)
    assert calls == [None, [f]]


async def test_a_root_missing_at_start_or_moved_away_and_made_again_is_followed_live(tmp_path: Path) -> None:
    # Regression: a root missing at start, or moved away and made again, was never watched again:
    # its lines waited for the rescan (a minute) for the life of the daemon
    import functools

    from structlog.testing import capture_logs

    from ingestd.daemon.tailer import Tailer, watch_changes

    root = tmp_path / "projects"
    calls: list[tuple[list[Path] | None, int]] = []  # (paths, how many log lines there were then)

    async def ingest(paths: Any) -> None:
        calls.append((None if paths is None else [Path(p) for p in paths], len(logs)))

    def rearmed_and_scanned() -> bool:
        marks = [i for i, e in enumerate(logs) if e["event"].startswith("test:")]
        appeared = [
            i for i, e in enumerate(logs) if e["event"] == "projects_root_appeared" and i > max(marks, default=0)
        ]
        return bool(appeared) and any(p is None and n > appeared[0] for p, n in calls)

    async def appended_and_seen(f: Path) -> None:
        f.parent.mkdir(parents=True, exist_ok=True)
        await until("the re-armed watcher's full scan", rearmed_and_scanned)
        with f.open("ab") as fh:
            fh.write(line(1))
        await until(f"{f.name} ingested by itself, as the watcher saw it", lambda: any(p == [f] for p, _ in calls))

    stop = asyncio.Event()
    changes = functools.partial(watch_changes, check_s=0.05)
    tailer = Tailer([root], ingest, changes=changes, rescan_interval_s=3600)
    with capture_logs() as logs:
        task = asyncio.create_task(tailer.run(stop))
        await until("the catch-up", lambda: [p for p, _ in calls] == [None])
        await appended_and_seen(root / "-p" / "a.jsonl")
        root.rename(tmp_path / "projects.away")
        await until("the move noticed", lambda: [e["event"] for e in logs].count("projects_root_missing") == 2)
        logs.append({"event": "test: the root is made again"})  # the next "appeared" is the second
        await appended_and_seen(root / "-q" / "b.jsonl")
        stop.set()
        await asyncio.wait_for(task, 5)
    events = [e["event"] for e in logs if e["event"].startswith("projects_root")]
    assert events == ["projects_root_missing", "projects_root_appeared"] * 2
    assert logs[0]["log_level"] == "warning" and logs[0]["root"] == str(root)


async def test_a_folder_moved_into_the_root_whole_is_read_at_once(tmp_path: Path) -> None:
    # a project folder moved (or copied) in whole: the watcher names the folder, never the
    # transcripts it already holds, which waited for the rescan (a minute)
    from ingestd.daemon.tailer import Tailer

    root = tmp_path / "projects"
    root.mkdir()
    elsewhere = tmp_path / "restored" / "-tmp-p"
    (elsewhere / SID / "subagents").mkdir(parents=True)
    (elsewhere / f"{SID}.jsonl").write_bytes(line(1))
    (elsewhere / SID / "subagents" / "agent-a1.jsonl").write_bytes(line(2))
    (elsewhere / "notes.txt").write_text("not a transcript")
    calls: list[list[Path] | None] = []
    stop = asyncio.Event()

    async def ingest(paths: Any) -> None:
        calls.append(None if paths is None else sorted(Path(p) for p in paths))

    tailer = Tailer([root], ingest, rescan_interval_s=3600)
    task = asyncio.create_task(tailer.run(stop))
    await until("the catch-up", lambda: calls == [None])
    elsewhere.rename(root / "-tmp-p")
    moved = root / "-tmp-p"
    want = [moved / SID / "subagents" / "agent-a1.jsonl", moved / f"{SID}.jsonl"]
    await until("the moved folder's transcripts read", lambda: want in calls, timeout_s=5)
    stop.set()
    await asyncio.wait_for(task, 5)
