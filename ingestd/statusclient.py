"""``python -I -S .../ingestd/statusclient.py --url URL [--token-env NAME] [--fields F]``: the status line.

Claude Code runs its ``statusLine`` command after every assistant message (and on its timer) and
shows what it prints. This client posts stdin to the daemon's ``POST /statusline`` and prints the
one line it answers; with the daemon down, slow or refusing, it prints a short fallback drawn from
the input alone (``ingestd off`` and Claude Code's own cost estimate). It exits 0 whatever happens
and prints exactly one line without control characters but colour codes (``NO_COLOR`` set: none),
never longer than ``COLUMNS`` when that is set.

It is run by path with ``-I -S`` and imports nothing of ingestd and nothing beyond the interpreter's
built-in modules (``_socket`` rather than ``socket``, ``json`` only for the fallback): Python's
start-up is most of its cost (BENCHMARKS.md, "status line"). The token comes from the environment
variable ``--token-env`` names, never the command line.
"""

from __future__ import annotations

import os
import sys

MAX_INPUT_BYTES = 1 << 20
MAX_ANSWER_BYTES = 64 << 10
TIMEOUT_S = 1.0


def _args(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while i < len(argv) - 1:
        if argv[i].startswith("--"):
            out[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            i += 1
    return out


def _split_url(url: str) -> tuple[str, int, str]:
    """(host, port, path) of ``http://host:port/path`` (IPv6 in brackets)."""
    rest = url.split("://", 1)[1]
    hostport, _, path = rest.partition("/")
    if hostport.startswith("["):
        host, _, port = hostport[1:].partition("]:")
    else:
        host, _, port = hostport.rpartition(":")
    return host, int(port or 80), "/" + path


def _quote(text: str) -> str:
    safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,"
    return "".join(c if c in safe else "".join(f"%{b:02X}" for b in c.encode()) for c in text)


def ask(url: str, body: bytes, query: dict[str, str], token: str, timeout_s: float = TIMEOUT_S) -> str | None:
    """POST ``body`` to ``url`` (with ``query``); the answer's text on a 200, else None. Never raises."""
    try:
        import _socket

        host, port, path = _split_url(url)
        qs = "&".join(f"{k}={_quote(v)}" for k, v in query.items())
        family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
        s = _socket.socket(family, _socket.SOCK_STREAM)
        try:
            s.settimeout(timeout_s)
            s.connect((host, port))
            shown = f"[{host}]" if ":" in host else host
            head = (
                f"POST {path}{'?' + qs if qs else ''} HTTP/1.1\r\nHost: {shown}:{port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
            )
            if token:
                head += f"Authorization: Bearer {token}\r\n"
            s.sendall(head.encode("latin-1") + b"\r\n" + body)
            chunks: list[bytes] = []
            got = 0
            while got <= MAX_ANSWER_BYTES:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
        finally:
            s.close()
        data = b"".join(chunks)
        status, _, rest = data.partition(b"\r\n")
        if status.split(b" ")[1:2] != [b"200"]:
            return None
        headers, _, answer = rest.partition(b"\r\n\r\n")
        if b"chunked" in headers.lower():
            return None
        return answer.decode("utf-8", "replace")
    except Exception:
        return None


def fallback(body: bytes) -> str:
    """The line without the daemon: ``ingestd off`` and, when the input says, the model and Claude
    Code's own cost estimate."""
    parts = ["ingestd off"]
    try:
        import json

        doc = json.loads(body)
        model = doc.get("model") or {}
        name = model.get("display_name") or model.get("id")
        if isinstance(name, str):
            parts.append(name)
        cost = (doc.get("cost") or {}).get("total_cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            sound = 0 <= cost < float("inf")  # NaN, infinite, negative: not an amount
            parts.append(f"CC ${cost:.2f}" if sound else "CC ?")
    except Exception:
        pass
    return " · ".join(parts)


def clean(line: str, columns: int | None, color: bool = True) -> str:
    """The first line of ``line``, without control characters except SGR colour sequences
    (``ESC [ ... m``; none when not ``color``), cut to ``columns`` visible characters when given."""
    line = line.split("\n", 1)[0]
    out: list[str] = []
    visible = 0
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\x1b" and line[i + 1 : i + 2] == "[":
            j = i + 2
            while j < len(line) and (line[j].isdigit() or line[j] == ";"):
                j += 1
            if color and j < len(line) and line[j] == "m":
                out.append(line[i : j + 1])
            i = j + 1
            continue
        if c.isprintable():
            if columns is not None and visible >= columns:
                break
            out.append(c)
            visible += 1
        i += 1
    text = "".join(out)
    return text + "\x1b[0m" if "\x1b[" in text else text


def main(argv: list[str] | None = None) -> int:
    """Print the status line; always returns 0."""
    try:
        args = _args(sys.argv[1:] if argv is None else argv)
        body = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        env = os.environ
        no_color = bool(env.get("NO_COLOR"))
        cols = env.get("COLUMNS", "")
        columns = int(cols) if cols.isdigit() and int(cols) > 0 else None
        query = {"color": "0" if no_color else "1"}
        if columns is not None:
            query["columns"] = str(columns)
        if args.get("fields"):
            query["fields"] = args["fields"]
        token = env.get(args["token-env"], "") if args.get("token-env") else ""
        answer = None
        if "url" in args and len(body) <= MAX_INPUT_BYTES:
            answer = ask(args["url"], body, query, token, float(args.get("timeout-s", TIMEOUT_S)))
        line = answer if answer is not None else fallback(body)
        sys.stdout.write(clean(line, columns, not no_color) + "\n")
        sys.stdout.flush()
    except BaseException:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
