"""SQLite access: connection policy, migrations, the writer, read queries."""
