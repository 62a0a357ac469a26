"""Counted nouns for people: ``1 session``, ``2 sessions``. Pure, no imports (commands use it
without paying for rich)."""


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 session``, ``2 sessions`` (``many`` for irregular plurals)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
