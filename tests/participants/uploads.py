"""Uploads for the participants' tests: real archives, as a student would make them."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RANDOM_BOT = (ROOT / "clients/python/craits_bot/examples/random_bot.py").read_text(encoding="utf-8")
MANIFEST = 'command = ["python", "bot.py"]\n'


def zip_of(files: dict[str, str | bytes], folder: str = "") -> bytes:
    """A zip of ``files`` (path: content), inside ``folder/`` as zipping a folder makes it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(f"{folder}/{name}" if folder else name, content)
    return buffer.getvalue()


def good_bot(build: str | None = None) -> bytes:
    manifest = MANIFEST + (f"build = {json.dumps(build)}\n" if build else "")
    return zip_of({"bot.toml": manifest, "bot.py": RANDOM_BOT}, folder="mybot")


def tar_with(members: list[tarfile.TarInfo], payloads: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member in members:
            data = (payloads or {}).get(member.name)
            archive.addfile(member, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()
