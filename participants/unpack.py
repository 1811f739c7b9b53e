"""An upload, unpacked within bounds, and the ``bot.toml`` that says how to build and run it.

A participant uploads a zip, a tar (.tar, .tar.gz, .tgz) or one source file. Archives are
written by strangers, so each member is checked before a byte of it is written: absolute
paths, ``..``, links and devices are refused, and the bounds (:class:`Bounds`) are counted
on the bytes actually unpacked, so a zip bomb stops at the unpacked limit whatever its
headers claim. Archive litter (``__MACOSX/``, ``.DS_Store``, ``._*``) is skipped.

A tar is read as a stream (:func:`_tar_entries`): decompressed within a byte budget (the
unpacked limit and room for the headers of the entries allowed), every entry counted against
the files limit, folders too, and none kept once passed, so that a small ``.tar.gz`` of a
gigabyte, or of a hundred thousand folders, costs the web process and the admission nothing
past the limits.

``bot.toml``::

    command = ["python", "bot.py"]    # how to start the bot, in its folder
    build = "make"                    # optional: a shell line run once, in the sandbox, before admission

A single ``.py`` or ``.js`` file needs no manifest (``python FILE`` / ``craits-js-bot --strategy FILE``).
"""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import lzma
import os
import shlex
import stat
import tarfile
import tomllib
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from server.transport.commands import JS_KIT

MANIFEST = "bot.toml"
MiB = 2**20
SINGLE_FILE_COMMANDS = {".py": ("python",), ".js": (JS_KIT, "--strategy"), ".mjs": (JS_KIT, "--strategy")}
"""The command a single uploaded file runs with: a .py file is a bot of the Python kit (it ends
with run(MyBot())); a .js file a strategy of the JavaScript kit (docs/first-bot.md), run by
its bot.js, which does the networking."""
IGNORED = ("__MACOSX", ".DS_Store", "Thumbs.db", ".git")
_CHUNK = 64 * 1024
NO_MANIFEST = (f"no {MANIFEST} at the top of the upload: add one saying how to start the bot (and, if it "
               f"needs one, how to build it), e.g.\n"
               f'    command = ["python", "bot.py"]\n'
               f'    build = "make"')


class UploadError(Exception):
    """An upload that is refused; the message says why (and names the limit)."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """What one upload may be (the organizer may set others)."""

    packed: int = 20 * MiB
    unpacked: int = 200 * MiB
    files: int = 5000


@dataclass(frozen=True, slots=True)
class Manifest:
    command: tuple[str, ...]
    build: tuple[str, ...] | None = None


def _ignored(parts: tuple[str, ...]) -> bool:
    return any(p in IGNORED or p.startswith("._") for p in parts)


def _safe_parts(name: str) -> tuple[str, ...]:
    """The member's path as parts under the folder; UploadError for one that would escape it."""
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise UploadError(f"{name!r}: absolute paths are not allowed in an upload")
    parts = tuple(p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", "."))
    if ".." in parts:
        raise UploadError(f"{name!r}: '..' is not allowed in an upload's paths")
    return parts


class _Writer:
    """Writes members under ``dest``, counting files and bytes against the bounds."""

    def __init__(self, dest: Path, bounds: Bounds) -> None:
        self.dest = dest
        self.bounds = bounds
        self.files = 0
        self.bytes = 0

    def write(self, parts: tuple[str, ...], source: IO[bytes], mode: int = 0o644) -> None:
        self.files += 1
        if self.files > self.bounds.files:
            raise UploadError(f"more than {self.bounds.files} files: the limit is {self.bounds.files}")
        target = self.dest.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as out:
            while chunk := source.read(_CHUNK):
                self.bytes += len(chunk)
                if self.bytes > self.bounds.unpacked:
                    raise UploadError(f"more than {self.bounds.unpacked // MiB} MB unpacked: the limit is "
                                      f"{self.bounds.unpacked // MiB} MB")
                out.write(chunk)
        os.chmod(target, 0o755 if mode & 0o111 else 0o644)


def _too_big(bounds: Bounds) -> UploadError:
    return UploadError(f"more than {bounds.unpacked // MiB} MB unpacked: the limit is {bounds.unpacked // MiB} MB")


def _too_many(bounds: Bounds) -> UploadError:
    return UploadError(f"more than {bounds.files} files and folders: the limit is {bounds.files} files")


HEADER_ROOM = 2048
"""Bytes of a tar stream allowed per entry beside its content: its header, a long name's or a
pax header's, and the padding."""
_DAMAGED = (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError)


class _Budgeted(io.RawIOBase):
    """A decompressed stream that raises UploadError (the unpacked limit) once more than
    ``budget`` bytes have been read from it: whatever tarfile reads, a header's or a member's."""

    def __init__(self, source: io.BufferedIOBase, budget: int, bounds: Bounds) -> None:
        self.source = source
        self.budget = budget
        self.bounds = bounds
        self.used = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        wanted = self.budget + 1 - self.used if size is None or size < 0 else min(size, self.budget + 1 - self.used)
        data = self.source.read(max(wanted, 1))
        self.used += len(data)
        if self.used > self.budget:
            raise _too_big(self.bounds)
        return data


def _decompressed(data: bytes) -> io.BufferedIOBase:
    """The tar inside ``data`` (gzip, bzip2, xz or none), decompressed as it is read."""
    if data.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=io.BytesIO(data))
    if data.startswith(b"BZh"):
        return bz2.BZ2File(io.BytesIO(data))
    if data.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(io.BytesIO(data))
    return io.BytesIO(data)


def _tar_entries(data: bytes, bounds: Bounds) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    """Each entry of the tar ``data`` with its archive (read a member's content before asking for
    the next), as a stream: UploadError past the files limit (every entry counts, folders too) or
    the unpacked one (the content an entry declares, and every byte decompressed); tarfile's
    errors for a damaged archive."""
    budget = bounds.unpacked + HEADER_ROOM * (bounds.files + 1) + 64 * 1024
    stream = _Budgeted(_decompressed(data), budget, bounds)
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        entries = declared = 0
        while (member := archive.next()) is not None:
            archive.members.clear()  # type: ignore[attr-defined]  # (tarfile keeps every entry it read: none is needed again)
            entries += 1
            declared += member.size if member.isfile() else 0
            if entries > bounds.files:
                raise _too_many(bounds)
            if declared > bounds.unpacked:  # (said from its header, before a byte of it is decompressed)
                raise _too_big(bounds)
            yield archive, member


def unpack(data: bytes, filename: str, dest: Path, bounds: Bounds | None = None) -> None:
    """Unpack ``data`` (named ``filename``) into the empty folder ``dest``; UploadError if refused."""
    bounds = bounds or Bounds()
    if len(data) > bounds.packed:
        raise UploadError(f"the upload is {len(data) / MiB:.1f} MB: the limit is {bounds.packed // MiB} MB packed")
    if not data:
        raise UploadError("the upload is empty")
    writer = _Writer(dest, bounds)
    lower = filename.lower()
    if zipfile.is_zipfile(io.BytesIO(data)):
        _unzip(data, writer)
    elif lower.endswith((".tar", ".tar.gz", ".tgz")) or _is_tar(data, bounds):
        _untar(data, writer)
    elif Path(lower).suffix in SINGLE_FILE_COMMANDS:
        parts = _safe_parts(Path(filename).name)
        writer.write(parts, io.BytesIO(data))
    else:
        raise UploadError(f"{filename!r}: upload a .zip, a .tar.gz (or .tgz, .tar) with a {MANIFEST}, "
                          f"or a single {', '.join(SINGLE_FILE_COMMANDS)} file")
    if writer.files == 0:
        raise UploadError("the archive holds no files")
    _lift_single_folder(dest)


def check_manifest(data: bytes, filename: str, bounds: Bounds | None = None) -> None:
    """Refuse at once (UploadError) an archive with no ``bot.toml`` where the admission will
    look for one (at its top, or in its one folder) and not one source file that implies it,
    or one past the files or unpacked limits, rather than store a version that can only be
    refused. Only the names are read (a tar as a stream, within the limits: :func:`_tar_entries`);
    an archive that cannot be listed is left to the admission, which says why."""
    bounds = bounds or Bounds()
    try:
        if zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                if len(archive.infolist()) > bounds.files:
                    raise _too_many(bounds)
                names = [i.filename for i in archive.infolist() if not i.is_dir()]
        elif filename.lower().endswith((".tar", ".tar.gz", ".tgz")) or _is_tar(data, bounds):
            names = [m.name for _, m in _tar_entries(data, bounds) if not m.isdir()]  # (at most bounds.files)
        else:
            return  # (one file: it needs no manifest, or unpack says what an upload may be)
    except (zipfile.BadZipFile, *_DAMAGED):
        return
    try:
        files = [p for p in map(_safe_parts, names) if p and not _ignored(p)]
    except UploadError:
        return  # (the admission refuses it, naming the member)
    tops = {p[0] for p in files}
    if len(tops) == 1 and all(len(p) > 1 for p in files):  # (one folder: _lift_single_folder lifts it)
        files = [p[1:] for p in files]
    top = [p[0] for p in files if len(p) == 1]
    if MANIFEST in top or (len(top) == 1 and PurePosixPath(top[0]).suffix in SINGLE_FILE_COMMANDS):
        return
    if files:
        raise UploadError(NO_MANIFEST)


def _is_tar(data: bytes, bounds: Bounds) -> bool:
    """Whether ``data`` opens as a tar (its first entry is read, within the limits)."""
    try:
        next(_tar_entries(data, bounds), None)
        return True
    except (*_DAMAGED, UploadError):
        return False


def _unzip(data: bytes, writer: _Writer) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError) as err:
        raise UploadError(f"not a readable zip: {err}") from None
    with archive:
        for info in archive.infolist():
            parts = _safe_parts(info.filename)
            if not parts or _ignored(parts):
                continue
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise UploadError(f"{info.filename!r}: links are not allowed in an upload")
            if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise UploadError(f"{info.filename!r}: only files and folders are allowed in an upload")
            if info.is_dir():
                continue
            try:
                with archive.open(info) as source:
                    writer.write(parts, source, mode)
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as err:
                raise UploadError(f"{info.filename!r}: cannot be unpacked: {err}") from None


def _untar(data: bytes, writer: _Writer) -> None:
    entries = _tar_entries(data, writer.bounds)
    try:
        first = next(entries, None)
    except _DAMAGED as err:  # (not a tar at all, or one cut short in its first entry)
        what = "not a readable tar archive" if isinstance(err, tarfile.ReadError) else "the tar archive is damaged"
        raise UploadError(f"{what}: {err}") from None
    try:
        for archive, member in itertools.chain([first] if first else [], entries):
            parts = _safe_parts(member.name)
            if not parts or _ignored(parts):
                continue
            if member.issym() or member.islnk():
                raise UploadError(f"{member.name!r}: links are not allowed in an upload")
            if member.isdir():
                continue
            if not member.isfile():
                raise UploadError(f"{member.name!r}: only files and folders are allowed in an upload "
                                  "(no devices, pipes or sockets)")
            source = archive.extractfile(member)
            assert source is not None
            writer.write(parts, source, member.mode)
    except _DAMAGED as err:
        raise UploadError(f"the tar archive is damaged: {err}") from None


def _lift_single_folder(dest: Path) -> None:
    """An archive of one folder (``mybot/bot.toml``, as zipping a folder makes): its content
    becomes the version's folder."""
    entries = list(dest.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not (dest / MANIFEST).exists():
        inner = entries[0]
        lifted = dest / f".lift-{os.getpid()}"
        inner.rename(lifted)
        for child in list(lifted.iterdir()):
            child.rename(dest / child.name)
        lifted.rmdir()


def read_manifest(folder: Path) -> Manifest:
    """The version's ``bot.toml``, or the command a single source file implies; UploadError
    naming the key otherwise."""
    path = folder / MANIFEST
    if not path.is_file():
        files = [p for p in folder.iterdir() if p.is_file()]
        if len(files) == 1 and files[0].suffix in SINGLE_FILE_COMMANDS:
            return Manifest((*SINGLE_FILE_COMMANDS[files[0].suffix], files[0].name))
        raise UploadError(NO_MANIFEST)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise UploadError(f"{MANIFEST}: {err}") from None
    unknown = sorted(set(data) - {"command", "build"})
    if unknown:
        raise UploadError(f"{MANIFEST}: unknown key {unknown[0]!r} (the keys are command and build)")
    if "command" not in data:
        raise UploadError(f'{MANIFEST}: no command: say how to start the bot, e.g. command = ["python", "bot.py"]')
    command = _argv(data["command"], "command")
    build = None
    if "build" in data:  # (a string is a shell line: `make && strip bot`; a list runs as it is)
        build = ("sh", "-c", data["build"]) if isinstance(data["build"], str) and data["build"].strip() \
            else _argv(data["build"], "build")
    return Manifest(command, build)


def _argv(value: object, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = shlex.split(value)
        except ValueError as err:
            raise UploadError(f"{MANIFEST}: {key}: {err}") from None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise UploadError(f'{MANIFEST}: {key} must be a command line, e.g. {key} = ["python", "bot.py"]')
    return tuple(value)
