"""Tool-call status and subagent outcome classification (SPEC §4.2, §4.5), pure."""

from __future__ import annotations

# Status ranks: the row converges to the highest-ranked evidence whatever the arrival order
# (a hook can arrive twice, late, or before the transcript's tool_result).
STATUSES = ("running", "completed", "failed", "interrupted", "denied")
RUNNING, COMPLETED, FAILED, INTERRUPTED, DENIED = range(5)

# corpus/claude-projects/-home-user-projects-spotter/55604662-….jsonl: a cancelled call's
# tool_result is_error with "The user doesn't want to proceed with this tool use…", followed by
# the user text "[Request interrupted by user for tool use]".
_INTERRUPT_MARKERS = ("doesn't want to proceed", "[Request interrupted by user")
_DENIED_MARKERS = ("Permission to use", "permission denied", "was denied", "has been denied")


def result_status(is_error: bool, text: str) -> int:
    """Status rank of a ``tool_result`` block: completed, or failed / interrupted / denied.

    Args:
        is_error: bool, the block's ``is_error``.
        text: str, its text content (the structural error message Claude Code writes).
    """
    if not is_error:
        return COMPLETED
    if any(m in text for m in _INTERRUPT_MARKERS):
        return INTERRUPTED
    if any(m in text for m in _DENIED_MARKERS):
        return DENIED
    return FAILED


def spawn_cause(text: str) -> str:
    """``outcome_cause`` of a subagent whose spawn ``tool_result`` came back ``is_error``."""
    if any(m in text for m in _INTERRUPT_MARKERS):
        return "user_interrupt"
    if any(m in text for m in _DENIED_MARKERS):
        return "permission_failed"
    low = text.lower()
    if "rate limit" in low or "rate_limit" in low or "concurrency" in low:
        return "concurrency_limit"
    if "overloaded" in low or "unavailable" in low:
        return "dispatch_unavailable"
    return "unclassified"


# How an agent's newest turn ends its run (SPEC §4.2 ``error`` / ``outcome_cause``). The kinds:
# ``end`` an assistant reply calling no tool (the run's normal ending), ``tool`` an assistant
# reply calling one, ``result`` tool results, ``prompt`` user text, ``synthetic`` a placeholder
# turn that is no error ("No response requested.", 1.0.119), and the failure kinds below.
END = "end"
# A failure kind as the newest turn ends the run in error whatever else is known (Claude Code
# stops the run there); ``denied`` only once the run is known to be over (the agent may reply to
# a denial and go on).
FAILED_ENDINGS = {
    # corpus/claude-projects/-Users-user-rcconsultech-task-api-benchmark-v0-2/agent-4ed9b522.jsonl
    # line 59 (2.0.60): the subagent's last record is a `<synthetic>` turn with
    # `"error": "rate_limit"`, `isApiErrorMessage: true`, "Limit reached · resets 7pm …".
    "rate_limit": "concurrency_limit",
    # isApiErrorMessage without a rate-limit mark: "API Error: …" (FORMATS.md §1.2; 1.0.48,
    # 2.1.42), the API did not take the request (overloaded, 5xx, connection reset).
    "api_error": "dispatch_unavailable",
    # corpus/claude-projects/-home-user-projects-spotter-worktrees-spotter-fum/8463c716-….jsonl
    # lines 66 and 78: user text "[Request interrupted by user]" / "[… for tool use]"; hooks:
    # PostToolUseFailure with `is_interrupt: true` (corpus/hooks/*/PostToolUseFailure.jsonl).
    "interrupt": "user_interrupt",
}
_USAGE_LIMIT_TEXT = ("Limit reached", "hit your limit", "rate limit", "rate_limit")


def synthetic_kind(record_error: object, api_error: bool, text: str) -> str:
    """Kind of a ``<synthetic>`` assistant turn (FORMATS.md §1.2 "Error / synthetic turns").

    Args:
        record_error: the record's ``error`` field (``"rate_limit"`` in 2.0.60 and 2.1.42).
        api_error: bool, the record's ``isApiErrorMessage`` (1.0.48, 2.0.60, 2.1.42).
        text: str, the turn's text (1.0.48 has only the flag: "Limit reached · resets …").
    """
    if record_error == "rate_limit" or (api_error and any(m in text for m in _USAGE_LIMIT_TEXT)):
        return "rate_limit"
    if api_error or isinstance(record_error, str):
        return "api_error"
    return "synthetic"


def user_kind(text: str | None, result_statuses: list[int]) -> str:
    """Kind of a user turn: its tool results' worst status, else its text."""
    if INTERRUPTED in result_statuses or (text is not None and text.startswith("[Request interrupted by user")):
        return "interrupt"
    if DENIED in result_statuses:
        return "denied"
    if result_statuses:
        return "result"
    return "prompt"


def ending(last_turn: tuple[str, str] | None, over: bool) -> str | None:
    """``outcome_cause`` of a subagent from its newest turn, or None when it did not fail.

    Args:
        last_turn: ``AgentEv.last_turn``.
        over: bool, the run is known to be over without a success signal (the session ended
            with neither a spawn result, a task-notification nor a SubagentStop for it).
    """
    if last_turn is None:
        return None
    kind = last_turn[1]
    cause = FAILED_ENDINGS.get(kind)
    if cause is not None:
        return cause
    if not over or kind == END:
        return None
    # The session ended while the subagent's transcript stops mid-run (its newest turn is a
    # tool call, tool results or a prompt: no final reply) and its spawn never resolved.
    return "permission_failed" if kind == "denied" else "terminated_early"
