"""Tournament configurations of built-in bots, as TOML text, for the tests that play them."""

from __future__ import annotations

from pathlib import Path


def builtin_tournament(name: str, seed: int, deals: int, bots: dict[str, str], table_size: int = 3) -> str:
    """A short-game tournament of in-process bots (bot name -> built-in policy), two games at once."""
    head = (
        f'name = "{name}"\ntable_size = {table_size}\ndeals = {deals}\nseed = {seed}\nconcurrency = 2\n\n'
        "[flags]\nshort_game = true\n"
    )
    return head + "".join(f'\n[[bots]]\nname = "{bot}"\nbuiltin = "{policy}"\n' for bot, policy in bots.items())


def class_folder(folder: Path) -> Path:
    """The simplest class layout: the file (``class.toml``) and a bot's script (``alice.py``, which
    exits at once) in one folder, beside a built-in bot; a sandboxed bot's cwd is then that
    folder, which would hold the output ``logs/class/``. Returns the file."""
    folder.chmod(0o755)  # (a referee running as root runs a sandboxed bot as another user)
    (folder / "alice.py").write_text("raise SystemExit(1)\n")
    config = folder / "class.toml"
    config.write_text('name = "class"\ntable_size = 2\n\n[[bots]]\nname = "alice"\ncommand = ["python", "alice.py"]\n'
                      '\n[[bots]]\nname = "house"\nbuiltin = "random"\n')
    return config
