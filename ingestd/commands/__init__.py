"""One module per command; each exposes ``register(cli: click.Group)``.

Every module not named ``_*`` is a command (``ingestd.cli`` finds them), listed in ``__all__``;
the ``_*`` modules are the commands' shared helpers.
"""

__all__ = [
    "backup",
    "blocks",
    "cost",
    "db",
    "doctor",
    "export",
    "hooks",
    "ingest",
    "limits",
    "migrate",
    "plugin",
    "pricing",
    "project",
    "prune",
    "replay",
    "search",
    "serve",
    "service",
    "sessions",
    "ship",
    "status",
    "statusline",
    "tree",
    "verify",
]
