"""The projector's rule revision.

Bump ``PROJECTION_REVISION`` in the same commit as any change to what the projector
derives from a given log (a new rule, a changed precedence, a new column's value):
writers then re-project existing databases from their logs on first open
(``ingestd.ingest.revision``), so live projections always equal a replay.

History:
    1: the rules as of the first release (outcome causes, agent-collision rule,
       cross-session message claims, hook evidence).
"""

PROJECTION_REVISION = 1
