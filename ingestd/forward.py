"""``python -m ingestd.forward --url URL [--token-env NAME] [--timeout-s 2]``: a command-hook forwarder.

For hook events that accept only ``type: "command"`` (SessionStart, Setup) and for Claude
Code older than 2.1.63: reads the hook input from stdin, POSTs it to the daemon, discards
the reply, prints nothing (SessionStart stdout would reach the model's context) and exits 0
whatever happens (exit 2 would block the action). The token comes from the environment
variable named by ``--token-env``, never from the command line. Any other argument is ignored
(``--kept-empty`` is a mark for ``hooks uninstall``: ``ingestd.claude.hooksetup.KEPT_EMPTY``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import urllib.request

MAX_BODY_BYTES = 1 << 20


def main(argv: list[str] | None = None) -> int:
    """Forward stdin; always returns 0."""
    with contextlib.suppress(BaseException):
        ap = argparse.ArgumentParser(prog="ingestd.forward", add_help=False)
        ap.add_argument("--url", required=True)
        ap.add_argument("--token-env", default=None)
        ap.add_argument("--timeout-s", type=float, default=2.0)
        args, _ = ap.parse_known_args(argv)
        body = sys.stdin.buffer.read(MAX_BODY_BYTES + 1)
        headers = {"Content-Type": "application/json"}
        token = os.environ.get(args.token_env, "") if args.token_env else ""
        if token:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(args.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=args.timeout_s) as resp:
            resp.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
