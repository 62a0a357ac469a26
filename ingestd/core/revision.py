"""Every revision number of ingestd's rules, in one place.

``PROJECTION_REVISION``: the projector's rules. ``INGEST_REVISION``: how transcript bytes are
read into log rows (framing, keys, session-of-line); it is stored on every tail checkpoint.

Bump ``PROJECTION_REVISION`` in the same commit as any change to what the projector
derives from a given log (a new rule, a changed precedence, a new column's value):
writers then re-project existing databases from their logs on first open
(``ingestd.projection.reproject``), so live projections always equal a replay.

History:
    1: the rules as of the first release (outcome causes, agent-collision rule,
       cross-session message claims, hook evidence).
    2: spawn edges from Task/Agent/Workflow hooks (tool_response.agentId); a hook without
       agent_id no longer re-attributes a tool call; hook session_title beats summaries.
    3: a tool call without a result whose agent is terminal (completed / error) or whose
       session ended is ``interrupted`` (ended_at NULL), no longer ``running`` forever.
    4: agents.evidence_status (migration 0007); a working subagent keeps its ancestors from the
       watchdog.
    5: validation before SQL (ingestd.core.validate): a refused timestamp or token count
       quarantines the record (table `quarantine`, migration 0008) and its usage counts at an
       inferred time; oversized marker rows are projected; a line logged `invalid` that now
       decodes (a leading BOM) is projected; lone surrogates map one-to-one to U+F0000+n.
    6: agents keyed by (session_id, id) (migration 0009), no cross-session agent claim; a subagent
       with no stop evidence when its session ends is ``error`` / ``terminated_early``;
       ``project_slug`` is a join of every source.
    7: titles by precedence (custom-title > hook session_title > ai-title > summary, migration
       0010); a summary titles the session of its leafUuid's record, not its file's.
    8: per message price facts on token_usage (prompt_tokens, speed, web_search_requests; 0011).
    9: a record timestamp outside the years 2000-2099 is refused like any impossible time (its
       usage counts at the inferred time; before, year 1 lost the row and year 9999 kept a
       session active forever).
    10: a transcript record's ``"timestamp": null`` is a timestamp that is not an instant
       (quarantined, its usage at the inferred time), no longer an absent one dated at the read
       time.
    11: a spawn called by its own child links nothing (a subagent whose own Task result named
       it lost its parent edge); a SessionStart after the latest SessionEnd reopens the session
       (a resumed session stayed ``completed``); a record timestamp more than a day after its
       line was read is refused (quarantined, its usage at the inferred time); usage on a message
       without an id is quarantined (it vanished without a trace).
    12: an oversized line's usage is looked for in its head when its tail has none (a record whose
       message came before a bulky field of its own lost its usage).
    13: streamed parts' cache writes are split from the raw fields joined over the parts (the max
       of the aggregate, of the 5m and of the 1h breakdown), no longer the max of each part's
       split (an aggregate-only part and a part with the breakdown counted more than was billed).
    14: a transcript line nested too deep to decode (past orjson's 1024 levels) is salvaged from
       its head and tail like an oversized line (a billed message with deep content was lost).
    15: a record whose timestamp is refused is dated at its inferred time everywhere (its
       session's and agent's activity, status evidence, tool and spawn times), no longer at the
       time its line was read (an old transcript's refused line made its session active "now").
    16: a log row whose decoding could take more than the memory budget (a wide line an older
       ingestd logged whole; a long line only the lenient pass takes, ``decode.LENIENT_BYTES_PER_BYTE``)
       is salvaged from its head and tail, not decoded (SPEC §11); so is a line with an integer of
       more than ``decode.MAX_INT_DIGITS`` digits (``number_too_large``: its billed message was lost).
    17: every projected text value is in its ``ingestd.core.storable`` form (no U+0000, at most 512
       bytes), the same in both stores: a NUL the central store could not hold stopped its
       projection for every host.
"""

PROJECTION_REVISION = 17

# Bump when parsing semantics change (how a file's bytes become log rows): every checkpoint
# (``ingest_checkpoints.ingest_revision``) is then distrusted and its file re-read
# (``ingestd.ingest.backfill``); existing idempotency keys make the re-read insert nothing new.
INGEST_REVISION = 1
