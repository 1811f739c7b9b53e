"""The engine's two kinds of refusal: a bad configuration and an illegal action."""

from __future__ import annotations


class CraitsError(Exception):
    """Base of every error the engine raises on purpose."""


class ConfigError(CraitsError, ValueError):
    """A game cannot be created as asked; the message says what is allowed."""


class IllegalActionError(CraitsError):
    """An action that is not legal now. The state is unchanged.

    ``rule`` names the ruling that forbids it (e.g. "3.2"), ``legal`` lists the
    text forms that were legal at this decision.
    """

    def __init__(self, message: str, rule: str, legal: list[str]) -> None:
        super().__init__(f"{message} (rule {rule}); legal now: {', '.join(legal)}")
        self.rule = rule
        self.legal = legal
        self.reason = message
