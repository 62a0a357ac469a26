"""ingestd: a durable, exact, queryable record of what Claude Code agents did."""

__version__ = "0.1.0"
