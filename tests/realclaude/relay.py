"""``relay.py URL [--print TEXT]``: post stdin to URL, then print TEXT (a command hook or a status-line
command that records what Claude Code hands it). Standard library only; always exits 0 with the
hook's answer empty, so the relay itself never changes what Claude Code does."""

from __future__ import annotations

import sys
import urllib.request


def main(argv: list[str]) -> int:
    url = argv[1]
    prints = argv[3] if len(argv) > 3 and argv[2] == "--print" else None
    body = sys.stdin.buffer.read()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            resp.read()
    except OSError as e:
        print(f"relay: {url}: {e}", file=sys.stderr)
    if prints is not None:
        print(prints)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
