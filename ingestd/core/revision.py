"""Every revision number of ingestd's rules, in one place.

``PROJECTION_REVISION``: the projector's rules. ``INGEST_REVISION``: how transcript bytes are
read into log rows (framing, keys, session-of-line); it is stored on every tail checkpoint.

Bump ``PROJECTION_REVISION`` in the same commit as any change to what the projector
derives from a given log (a new rule, a changed precedence, a new column's value), and say what
changed under "Projection revisions" in ``CHANGELOG.md``: writers then re-project existing
databases from their logs on first open (``ingestd.projection.reproject``), so live projections
always equal a replay.
"""

PROJECTION_REVISION = 35

# Bump when parsing semantics change (how a file's bytes become log rows): every checkpoint
# (``ingest_checkpoints.ingest_revision``) is then distrusted and its file re-read
# (``ingestd.ingest.backfill``); existing idempotency keys make the re-read insert nothing new.
INGEST_REVISION = 2
