"""Living beside Claude Code: its settings.json and the hooks ingestd writes there, where its files
are, and the user service that keeps the daemon running."""
