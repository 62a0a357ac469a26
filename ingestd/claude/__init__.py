"""Living beside Claude Code: its settings.json and the hooks ingestd writes there, where its files
are, and the user service that keeps the daemon running.

``__all__`` names the modules other packages may import; the rest are this package's own (tests and
bench may import any).
"""

__all__ = [
    "doctor",
    "hooksetup",
    "paths",
    "pluginsetup",
    "service",
    "statuslinesetup",
]
