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
