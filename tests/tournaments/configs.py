"""Tournament configurations of built-in bots, as TOML text, for the tests that play them."""

from __future__ import annotations


def builtin_tournament(name: str, seed: int, deals: int, bots: dict[str, str], table_size: int = 3) -> str:
    """A short-game tournament of in-process bots (bot name -> built-in policy), two games at once."""
    head = (
        f'name = "{name}"\ntable_size = {table_size}\ndeals = {deals}\nseed = {seed}\nconcurrency = 2\n\n'
        "[flags]\nshort_game = true\n"
    )
    return head + "".join(f'\n[[bots]]\nname = "{bot}"\nbuiltin = "{policy}"\n' for bot, policy in bots.items())
