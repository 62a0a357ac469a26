"""Everything one benchmark run measured, gathered for the report."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.corpus import Corpus, FloorRun
from bench.hookload import LoadResult
from bench.hookwrk import WrkResult
from bench.ingestbench import IngestResult
from bench.live import LiveResult
from bench.profile import Hotspots
from bench.queries import Latency, ReplayResult


@dataclass
class CorpusResults:
    """The measurements of one corpus.

    Attributes:
        corpus: Corpus.
        floor: list[FloorRun], the orjson passes.
        ingest: IngestResult | None, None when ``ingestd ingest`` does not exist yet.
        replay: ReplayResult | None, None when not measured on this corpus.
    """

    corpus: Corpus
    floor: list[FloorRun] = field(default_factory=list)
    ingest: IngestResult | None = None
    replay: ReplayResult | None = None


@dataclass
class Results:
    """A whole run.

    Attributes:
        mode: str, "quick" or "full".
        command: str, how it was invoked.
        started: str, ISO date-time (UTC) of the start.
        elapsed_s: float, how long the whole bench took.
        corpora: list[CorpusResults], smallest first.
        startup_s: list[float], ``ingestd --version`` walls.
        busy_port_s: list[float], walls of ``ingestd serve`` failing on a taken port (the largest
            corpus's backfill waiting); busy_port_note says why it is missing.
        cost: Latency | None, on the largest database.
        tree: Latency | None, on the largest database.
        tree_session: str, the session used for ``tree``.
        hooks: dict[int, list[LoadResult | WrkResult]], concurrency -> runs ({} when the daemon is missing).
        hooks_generator: str, the load generator that produced ``hooks`` (wrk, else the Python one
            with the reason in ``hooks_generator_note``).
        hooks_daemon_cpu: dict[int, float], concurrency -> daemon CPU seconds per second of load.
        hooks_client_cpu: dict[int, float], concurrency -> load generator CPU seconds per second of load.
        hooks_error: str, why the hook load was not measured.
        live: LiveResult | None.
        hotspots: dict[str, Hotspots], label -> profile.
        profile_notes: list[str], why a profile was skipped.
        unavailable: list[str], commands that do not exist yet.
    """

    mode: str
    command: str
    started: str
    elapsed_s: float = 0.0
    corpora: list[CorpusResults] = field(default_factory=list)
    startup_s: list[float] = field(default_factory=list)
    busy_port_s: list[float] = field(default_factory=list)
    busy_port_note: str = ""
    cost: Latency | None = None
    tree: Latency | None = None
    tree_session: str = ""
    hooks: dict[int, list[LoadResult | WrkResult]] = field(default_factory=dict)
    hooks_generator: str = ""
    hooks_generator_note: str = ""
    hooks_daemon_cpu: dict[int, float] = field(default_factory=dict)
    hooks_client_cpu: dict[int, float] = field(default_factory=dict)
    hooks_error: str = ""
    live: LiveResult | None = None
    hotspots: dict[str, Hotspots] = field(default_factory=dict)
    profile_notes: list[str] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)
