"""The tailer with a scripted change source: which files get ingested, and when."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from ingestd.daemon import tailer as tailer_mod
from ingestd.daemon.tailer import ChangeBatch, Tailer
from ingestd.errors import BusyError

ADDED, MODIFIED, DELETED = 1, 2, 3


def scripted(batches: list[ChangeBatch]) -> object:
    async def source(roots: Sequence[Path], stop: asyncio.Event) -> AsyncIterator[ChangeBatch]:
        for b in batches:
            yield b

    return source


async def test_catch_up_first_then_changed_transcripts_only(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "p").mkdir(parents=True)
    a = root / "p" / "a.jsonl"
    b = root / "p" / "b.jsonl"
    meta = root / "p" / "agent-x.meta.json"
    for f in (a, b, meta):
        f.write_text("{}\n")
    calls: list[list[Path] | None] = []

    async def ingest(paths: Sequence[Path] | None) -> None:
        calls.append(None if paths is None else list(paths))

    batches: list[ChangeBatch] = [
        {(MODIFIED, str(a)), (MODIFIED, str(root / "p" / "notes.txt"))},
        {(ADDED, str(b)), (MODIFIED, str(b)), (ADDED, str(meta))},
        {(DELETED, str(root / "p" / "gone.jsonl"))},
    ]
    tailer = Tailer([root], ingest, changes=scripted(batches), rescan_interval_s=3600)  # type: ignore[arg-type]
    await asyncio.wait_for(tailer.run(asyncio.Event()), 5)
    assert calls == [None, [a], [meta, b]]  # the deleted file deletes nothing and is not read


async def test_periodic_rescan_runs_a_full_scan(tmp_path: Path) -> None:
    calls: list[object] = []
    stop = asyncio.Event()

    async def ingest(paths: Sequence[Path] | None) -> None:
        calls.append(paths)
        if len(calls) >= 3:
            stop.set()

    async def idle(roots: Sequence[Path], stop_: asyncio.Event) -> AsyncIterator[ChangeBatch]:
        await stop_.wait()
        return
        yield  # pragma: no cover

    tailer = Tailer([tmp_path], ingest, changes=idle, rescan_interval_s=0.001)
    await asyncio.wait_for(tailer.run(stop), 5)
    assert calls[:3] == [None, None, None]


@pytest.mark.parametrize(
    "error",
    [OSError("root vanished"), RuntimeError("error in underlying watcher: event queue overflow")],
    ids=["oserror", "other"],
)
async def test_a_failing_watcher_is_restarted(tmp_path: Path, error: Exception) -> None:
    starts = 0
    f = tmp_path / "s.jsonl"
    f.write_text("{}\n")
    calls: list[object] = []

    async def flaky(roots: Sequence[Path], stop_: asyncio.Event) -> AsyncIterator[ChangeBatch]:
        nonlocal starts
        starts += 1
        if starts == 1:
            raise error
        yield {(MODIFIED, str(f))}

    async def ingest(paths: Sequence[Path] | None) -> None:
        calls.append(paths)

    tailer = Tailer([tmp_path], ingest, changes=flaky, rescan_interval_s=0.001)
    await asyncio.wait_for(tailer.run(asyncio.Event()), 5)
    assert starts == 2
    assert [f] in calls


async def test_a_failed_ingest_is_retried_soon_not_at_the_next_rescan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # regression: the change that asked for a failed ingest is never reported again, so its
    # lines waited for the periodic rescan (60 s); and an unexpected exception ended following
    monkeypatch.setattr(tailer_mod, "RETRY_FIRST_S", 0.01)
    f = tmp_path / "s.jsonl"
    f.write_text("{}\n")
    stop = asyncio.Event()
    calls: list[object] = []
    failures: list[BaseException] = [BusyError("database is locked"), ValueError("a bug")]

    async def ingest(paths: Sequence[Path] | None) -> None:
        calls.append(None if paths is None else list(paths))
        if paths is not None and failures:
            raise failures.pop(0)
        if paths is None and len(calls) > 1:
            stop.set()

    async def two_changes(roots: Sequence[Path], stop_: asyncio.Event) -> AsyncIterator[ChangeBatch]:
        yield {(MODIFIED, str(f))}
        yield {(MODIFIED, str(f))}
        await stop_.wait()

    tailer = Tailer([tmp_path], ingest, changes=two_changes, rescan_interval_s=3600)
    await asyncio.wait_for(tailer.run(stop), 10)
    # catch-up, a change (busy), the next change (a bug: still followed), then the retry: a
    # full scan right away, not at the next rescan an hour later
    assert calls == [None, [f], [f], None]


async def test_a_folder_added_is_walked_off_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # review: handle() walked an added folder (os.walk) on the event loop: a restored project of
    # thousands of files held up every hook meanwhile. Here the walk waits for the loop to answer.
    import threading

    root = tmp_path / "projects"
    folder = root / "-restored"
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text("{}\n")
    started, answered = threading.Event(), threading.Event()
    walk = tailer_mod.transcripts_under

    def slow_walk(p: Path) -> list[Path]:
        started.set()
        assert answered.wait(3), "the loop did not run while the folder was walked"
        return walk(p)

    monkeypatch.setattr(tailer_mod, "transcripts_under", slow_walk)
    calls: list[list[Path] | None] = []

    async def ingest(paths: Sequence[Path] | None) -> None:
        calls.append(None if paths is None else list(paths))

    tailer = Tailer([root], ingest, rescan_interval_s=3600)
    handled = asyncio.create_task(tailer.handle({(ADDED, str(folder)), (MODIFIED, str(folder / "a.jsonl"))}))
    for _ in range(300):  # the loop runs this while the walk waits
        if started.is_set():
            break
        await asyncio.sleep(0.01)
    answered.set()
    assert await asyncio.wait_for(handled, 5) == [folder / "a.jsonl"]  # named twice, read once
    assert calls == [[folder / "a.jsonl"]]


async def test_only_a_root_itself_asks_for_a_full_scan(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "p").mkdir(parents=True)
    (root / "p" / "a.jsonl").write_text("{}\n")
    calls: list[list[Path] | None] = []

    async def ingest(paths: Sequence[Path] | None) -> None:
        calls.append(None if paths is None else list(paths))

    tailer = Tailer([root], ingest, rescan_interval_s=3600)
    assert await tailer.handle({(ADDED, str(root / "p" / "a.jsonl"))}) == [root / "p" / "a.jsonl"]
    assert await tailer.handle({(ADDED, str(root)), (ADDED, str(root / "p" / "a.jsonl"))}) == []
    assert calls == [[root / "p" / "a.jsonl"], None]
