"""What people read: the queries behind ``ingestd sessions | tree | cost | status`` and the read API.

Each report function takes a read connection and parameters and returns a JSON-able dict (money as
exact decimal strings). The CLI prints it with ``--json`` or hands it to ``render``; the HTTP API
returns it as is, so both answer the same question with the same document.

``__all__`` names the modules other packages may import; the rest are this package's own (tests and
bench may import any).
"""

__all__ = [
    "blocks",
    "blocksview",
    "budget",
    "cost",
    "datasette",
    "limits",
    "prompts",
    "render",
    "search",
    "searchview",
    "sessions",
    "short",
    "status",
    "statusline",
    "statusview",
    "timeline",
    "tree",
    "treeview",
    "usage",
    "window",
    "words",
]
