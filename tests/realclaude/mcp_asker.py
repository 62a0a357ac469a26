"""``mcp_asker.py``: a minimal MCP server on stdio (newline-delimited JSON-RPC) with one tool, ``ask``,
whose call asks the client for input (``elicitation/create``) and answers with what came back. It
makes Claude Code fire Elicitation and ElicitationResult. Standard library only."""

from __future__ import annotations

import json
import sys
from typing import Any

PROTOCOL = "2025-06-18"


def send(msg: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main() -> int:
    pending_call: Any = None
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "result": {
                        "protocolVersion": msg["params"].get("protocolVersion", PROTOCOL),
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "asker", "version": "1.0.0"},
                    },
                }
            )
        elif method == "tools/list":
            tool = {
                "name": "ask",
                "description": "Ask the user for their name",
                "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
            }
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [tool]}})
        elif method == "tools/call":
            pending_call = mid
            schema = {
                "type": "object",
                "properties": {"name": {"type": "string", "title": "Name"}},
                "required": ["name"],
            }
            send(
                {
                    "jsonrpc": "2.0",
                    "id": "elicit-1",
                    "method": "elicitation/create",
                    "params": {"message": "What is your name?", "requestedSchema": schema},
                }
            )
        elif mid == "elicit-1" and method is None:
            answer = msg.get("result") or msg.get("error")
            send(
                {
                    "jsonrpc": "2.0",
                    "id": pending_call,
                    "result": {"content": [{"type": "text", "text": json.dumps(answer)}], "isError": False},
                }
            )
        elif mid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
