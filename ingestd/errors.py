"""One rooted exception tree. Every error a user can see is an ``IngestdError``.

::

    IngestdError                      exit 2 unless said otherwise
    ├── ConfigError                   bad option, setting or path
    ├── InputError                    input that cannot be used (whole file, settings JSON, ...)
    ├── StorageError                  the database refused
    │   ├── BusyError                 another writer holds the database
    │   ├── IntegrityError            a constraint or guard trigger refused a row
    │   ├── MigrationError            the ledger or a migration file is not as pinned
    │   └── PragmaError               a connection pragma did not take
    ├── CheckFailed                   a check ran and found a difference (exit 1)
    └── DaemonError                   the daemon cannot start (port taken, second daemon)

Bad *lines* and bad hook *bodies* are not exceptions: the core returns them as
values (``Rejected``) and the shell counts them.
"""

from __future__ import annotations

from typing import Any


class IngestdError(Exception):
    """Root of every ingestd error.

    Args:
        message: one line for the user, saying what to do next.
        **context: fields that locate the problem (origin, offset, migration id, ...).
    """

    exit_code = 2

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context = context

    def __str__(self) -> str:
        return self.message


class ConfigError(IngestdError):
    """A command-line option, setting or path is unusable."""


class InputError(IngestdError):
    """Input that cannot be used at all (not a bad line: those are counted)."""


class StorageError(IngestdError):
    """The database refused an operation."""


class BusyError(StorageError):
    """Another connection holds the write lock past the busy timeout."""


class IntegrityError(StorageError):
    """A constraint or guard trigger refused a row."""


class MigrationError(StorageError):
    """A migration file or the ledger does not match its pinned checksum, or a migration failed."""


class PragmaError(StorageError):
    """A connection pragma read back a value other than the one set."""


class FileLost(StorageError):
    """The database path no longer names the file a daemon writes (replaced or deleted under it):
    nothing more is committed to the old file (``ingestd.daemon.fileguard``)."""


class CheckFailed(IngestdError):
    """A verification ran and found differences (replay mismatch, verify failure)."""

    exit_code = 1


class DaemonError(IngestdError):
    """The daemon cannot start: the port is taken or another daemon holds the database."""
