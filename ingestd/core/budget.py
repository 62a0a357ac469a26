"""Budgets: spend caps judged when Claude Code asks (PreToolUse, UserPromptSubmit), and the answer. Pure.

Caps are opt-in settings (``budget_*_usd``, ``budget_five_hour_*_pct``, all off by default):
today's, this week's and this session's spend in USD, each with a soft and a hard cap, and Claude
Code's official five-hour ``used_percentage`` with a soft and a hard cap. At or over a soft cap the
hook's answer carries a ``systemMessage`` (Claude Code shows it to the user); at or over a hard cap
it carries the decision that stops the call: for PreToolUse ``hookSpecificOutput.permissionDecision:
"deny"`` with the reason (the tool does not run, the model reads why), for UserPromptSubmit
``decision: "block"`` with the reason (the prompt is not sent). The reason names the cap, the
figure and how to raise it.

Never a block when the figures may be short (``Spend.unsure``: usage without a price, projections
computed by other rules): the answer warns instead and says why it did not block.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

BLOCKING_EVENTS = ("PreToolUse", "UserPromptSubmit")
_USD = (("daily", "today's spend"), ("weekly", "this week's spend"), ("session", "this session's spend"))


@dataclass(frozen=True, slots=True)
class Caps:
    """The caps in force (None: that cap is off).

    Attributes:
        daily_soft, daily_hard, weekly_soft, weekly_hard, session_soft, session_hard: Decimal USD.
        five_hour_pct_soft, five_hour_pct_hard: float, percent (0-100) of the official 5-hour limit.
    """

    daily_soft: Decimal | None = None
    daily_hard: Decimal | None = None
    weekly_soft: Decimal | None = None
    weekly_hard: Decimal | None = None
    session_soft: Decimal | None = None
    session_hard: Decimal | None = None
    five_hour_pct_soft: float | None = None
    five_hour_pct_hard: float | None = None

    def any(self) -> bool:
        """Some cap is on."""
        return any(getattr(self, f) is not None for f in self.__slots__)

    def needs_session(self) -> bool:
        return self.session_soft is not None or self.session_hard is not None


@dataclass(frozen=True, slots=True)
class Spend:
    """What the caps are judged against.

    Attributes:
        daily, weekly, session: Decimal USD, the priced spend of today (local day), this ISO week
            (from Monday, local) and this session (None: not known, e.g. no session id).
        five_hour_pct: float | None, the latest sound official five-hour percentage whose window has
            not reset yet (None: none).
        unsure: str | None, why the figures may be short (None: exact).
    """

    daily: Decimal
    weekly: Decimal
    session: Decimal | None
    five_hour_pct: float | None = None
    unsure: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """``warnings``: one sentence per soft cap reached (and per hard cap not enforced, with why);
    ``block``: the sentence of the first hard cap reached, when it is enforced (None: no block)."""

    warnings: tuple[str, ...] = ()
    block: str | None = None


def _usd(v: Decimal) -> str:
    return f"${v.quantize(Decimal('0.01'))}"


def _raise_hint(setting: str) -> str:
    return f"raise {setting} in the config file (or INGESTD_{setting.upper()}) and restart the daemon"


def judge(caps: Caps, spend: Spend) -> Verdict:
    """Which caps ``spend`` reaches, and whether one blocks (the module docstring's rules)."""
    warnings: list[str] = []
    block: str | None = None
    figures: list[tuple[str, str, Any, Any, Any, str]] = []
    for name, what in _USD:
        value = getattr(spend, name)
        if value is not None:
            figures.append((name, what, value, getattr(caps, f"{name}_soft"), getattr(caps, f"{name}_hard"), "usd"))
    if spend.five_hour_pct is not None:
        figures.append(
            ("five_hour", "the 5-hour limit used", spend.five_hour_pct, caps.five_hour_pct_soft,
             caps.five_hour_pct_hard, "pct"),
        )  # fmt: skip
    for name, what, value, soft, hard, unit in figures:
        shown = _usd(value) if unit == "usd" else f"{value:g}%"
        suffix = "usd" if unit == "usd" else "pct"
        if hard is not None and value >= hard:
            cap = _usd(hard) if unit == "usd" else f"{hard:g}%"
            text = f"ingestd budget: {what} {shown} reached the hard cap {cap} (budget_{name}_hard_{suffix})"
            if spend.unsure is not None and unit == "usd":
                warnings.append(f"{text}; not blocked, because {spend.unsure}")
            elif block is None:
                block = f"{text}: {_raise_hint(f'budget_{name}_hard_{suffix}')}"
            continue
        if soft is not None and value >= soft:
            cap = _usd(soft) if unit == "usd" else f"{soft:g}%"
            warnings.append(f"ingestd budget: {what} {shown} reached the soft cap {cap} (budget_{name}_soft_{suffix})")
    return Verdict(tuple(warnings), block)


def answer(verdict: Verdict, event: str) -> dict[str, Any] | None:
    """The hook's JSON answer for ``event`` (None: nothing to say, the empty 200).

    PreToolUse blocked: ``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
    "deny", "permissionDecisionReason": reason}, "systemMessage": reason}``; UserPromptSubmit blocked:
    ``{"decision": "block", "reason": reason, "systemMessage": reason}``; warnings only:
    ``{"systemMessage": "warning; warning"}``. Other events: None (they cannot be stopped here).
    """
    if event not in BLOCKING_EVENTS:
        return None
    if verdict.block is not None:
        message = "; ".join((verdict.block, *verdict.warnings))
        if event == "PreToolUse":
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": verdict.block,
                },
                "systemMessage": message,
            }
        return {"decision": "block", "reason": verdict.block, "systemMessage": message}
    if verdict.warnings:
        return {"systemMessage": "; ".join(verdict.warnings)}
    return None
