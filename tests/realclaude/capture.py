"""Regenerate ``fixtures/claude-2.1.332`` from a real Claude Code: ``python -m tests.realclaude.capture``.

Runs every scenario of ``tests.realclaude.scenarios`` (and two OTLP runs, one per protocol) with
the Claude Code that ``tests.realclaude.claude`` finds, in a temporary directory, and writes:

- ``hooks/<Event>.jsonl``: every hook body of that event, one delivery per line, in arrival order:
  ``{"scenario", "kinds", "body"}`` (an http and a command hook on the same event receive the same
  body: it is kept once, ``kinds`` says which received it);
- ``hooks/index.json``: per scenario, the deliveries in arrival order (event, which hook kinds got it);
- ``statusline/input-N.json``: the status-line command's stdin, in order;
- ``otlp/http-json/{logs,metrics}-N.json`` and ``otlp/http-protobuf/{logs,metrics}-N.pb``: OTLP/HTTP
  export bodies exactly as received (a protobuf body holding a path of the run is refused: it cannot
  be sanitised without re-encoding it);
- ``agents/``: the spawn scenario's subagent ``.meta.json`` and the main transcript's records about
  the async agent (its ``async_launched`` tool result, the ``<task-notification>`` queue-operation and
  user record).

Paths are sanitised as ``../shared/corpus`` is: the run's home becomes ``/home/user`` (its slug
``-home-user``), its TMPDIR ``/tmp``. Nothing else changes. ``--only NAME`` runs chosen scenarios and
leaves the other files alone.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.realclaude import standin as s
from tests.realclaude.claude import VERSION, Claude, find_or_install
from tests.realclaude.recorder import Hit, Recorder
from tests.realclaude.scenarios import SCENARIOS, Capture, run_scenario

OUT = Path(__file__).resolve().parents[2] / "fixtures" / f"claude-{VERSION}"


def slug(path: Path | str) -> str:
    """Claude Code's project folder name for ``path``: every character not a letter or digit is ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def sanitiser(root: Path) -> list[tuple[str, str]]:
    """The substitutions for a run under ``root`` (home ``root/<scenario>/home``), longest first."""
    pairs: list[tuple[str, str]] = []
    for home in sorted(root.glob("*/home")):
        pairs += [(slug(home), "-home-user"), (str(home), "/home/user"), (str(home.parent / "tmp"), "/tmp")]
    pairs.sort(key=lambda p: -len(p[0]))
    return pairs


def sanitise(text: str, pairs: list[tuple[str, str]]) -> str:
    for old, new in pairs:
        text = text.replace(old, new)
    return text


def otlp_scenario(exe: Path, root: Path, protocol: str) -> Capture:
    """A prompt with a Read, exporting OTLP logs and metrics to the recorder over ``protocol``."""
    with s.StandIn(request_ids=True) as api, Recorder() as rec:
        claude = Claude(exe, root, api.url)
        proj = claude.home() / "proj"
        (proj / "hello.txt").write_text("hello\n")
        api.script = s.script(s.conversation("OTEL-MAIN", s.read(str(proj / "hello.txt")), s.text("It says hello.")))
        claude.run("OTEL-MAIN read hello.txt", env=rec.otel_env(protocol)).check()
        return Capture(f"otlp-{protocol}", list(claude.runs), list(rec.hits), list(api.requests))


def _deliveries(cap: Capture) -> list[tuple[str, list[str], bytes]]:
    """The hook deliveries of a capture: (event, kinds that received it, body); an http and a command
    hit of one event with equal bodies are one delivery."""
    out: list[tuple[str, list[str], bytes]] = []
    pending: dict[tuple[str, bytes], int] = {}
    for h in cap.hooks():
        key = (h.name, json.dumps(h.json(), sort_keys=True).encode())
        i = pending.get(key)
        if i is not None and h.kind not in out[i][1]:
            out[i][1].append(h.kind)
            if len(out[i][1]) == 2:
                del pending[key]
            continue
        pending[key] = len(out)
        out.append((h.name, [h.kind], h.body))
    return out


def write_hooks(out: Path, caps: list[Capture], pairs: list[tuple[str, str]]) -> None:
    """``hooks/<Event>.jsonl`` and ``hooks/index.json``; lines of scenarios not in ``caps`` are kept."""
    hooks = out / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    rerun = {c.name for c in caps}
    index_path = hooks / "index.json"
    index: dict[str, Any] = json.loads(index_path.read_text()) if index_path.exists() else {}
    lines: dict[str, list[str]] = {}
    for path in sorted(hooks.glob("*.jsonl")):
        lines[path.stem] = [ln for ln in path.read_text().splitlines() if json.loads(ln)["scenario"] not in rerun]
    for cap in caps:
        rows = []
        for event, kinds, body in _deliveries(cap):
            clean = json.loads(sanitise(body.decode(), pairs))
            entry = {"scenario": cap.name, "kinds": sorted(kinds), "body": clean}
            lines.setdefault(event, []).append(json.dumps(entry, ensure_ascii=False))
            rows.append({"event": event, "kinds": sorted(kinds)})
        index[cap.name] = rows
    for event, kept in lines.items():
        path = hooks / f"{event}.jsonl"
        if kept:
            path.write_text("".join(x + "\n" for x in kept))
        else:
            path.unlink(missing_ok=True)
    index_path.write_text(json.dumps(dict(sorted(index.items())), indent=1) + "\n")


def write_statusline(out: Path, hits: list[Hit], pairs: list[tuple[str, str]]) -> None:
    d = out / "statusline"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for i, h in enumerate(hits, 1):
        (d / f"input-{i}.json").write_text(json.dumps(json.loads(sanitise(h.body.decode(), pairs)), indent=1) + "\n")


def write_otlp(out: Path, cap: Capture, protocol: str, root: Path, pairs: list[tuple[str, str]]) -> None:
    d = out / "otlp" / protocol.replace("/", "-")
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    counts: dict[str, int] = {}
    for h in cap.hits:
        if h.kind != "otlp":
            continue
        counts[h.name] = n = counts.get(h.name, 0) + 1
        if protocol == "http/json":
            (d / f"{h.name}-{n}.json").write_text(sanitise(h.body.decode(), pairs))
        else:
            if str(root).encode() in h.body:
                raise SystemExit(f"an OTLP protobuf {h.name} body holds a path of the run; it cannot be sanitised")
            (d / f"{h.name}-{n}.pb").write_bytes(h.body)


def write_agents(out: Path, cap: Capture, pairs: list[tuple[str, str]]) -> None:
    d = out / "agents"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    run = cap.runs[0]
    for meta in sorted(run.projects.rglob("*.meta.json")):
        (d / meta.name).write_text(sanitise(meta.read_text(), pairs))
    kept = []
    for path in run.main_transcripts():
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            text = json.dumps(rec)
            if rec.get("type") in ("user", "queue-operation") and (
                "async_launched" in text or "<task-notification>" in text
            ):
                kept.append(sanitise(line, pairs))
    (d / "async-agent-records.jsonl").write_text("".join(x + "\n" for x in kept))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--only", action="append", choices=sorted(SCENARIOS), help="run only these scenarios")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (its path is printed)")
    args = ap.parse_args(argv)
    exe = find_or_install()
    root = Path(tempfile.mkdtemp(prefix="claude-capture-"))
    names = args.only or list(SCENARIOS)
    caps: list[Capture] = []
    try:
        for name in names:
            (root / name).mkdir()
            cap = run_scenario(name, exe, root / name)
            print(f"{name}: {len(cap.runs)} run(s), fired {', '.join(cap.fired())}", file=sys.stderr)
            caps.append(cap)
        otlp = {}
        if not args.only:
            for protocol in ("http/json", "http/protobuf"):
                name = "otlp-" + protocol.replace("/", "-")
                (root / name).mkdir()
                otlp[protocol] = otlp_scenario(exe, root / name, protocol)
        pairs = sanitiser(root)
        write_hooks(args.out, caps, pairs)
        for cap in caps:
            if cap.name == "statusline":
                write_statusline(args.out, [h for h in cap.hits if h.kind == "statusline"], pairs)
            if cap.name == "spawn":
                write_agents(args.out, cap, pairs)
        for protocol, cap in otlp.items():
            write_otlp(args.out, cap, protocol, root, pairs)
    finally:
        if args.keep:
            print(root, file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
