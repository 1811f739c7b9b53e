"""Example bots: ``python -m craits_bot.examples.random_bot`` and ``...heuristic_bot``."""
