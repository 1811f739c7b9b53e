"""Uploads are strangers' archives: every bad one is refused with the reason (the limit named),
and nothing outside the folder is ever written."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from participants.unpack import Bounds, UploadError, check_manifest, read_manifest, unpack
from tests.participants.uploads import MANIFEST, tar_with, zip_of


def _member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, size, link
    return info


def _refused(data: bytes, filename: str, tmp_path: Path, bounds: Bounds | None = None) -> str:
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(UploadError) as caught:
        unpack(data, filename, dest, bounds)
    assert not (tmp_path / "evil").exists()
    return str(caught.value)


def test_a_zipped_folder_becomes_the_versions_folder_and_litter_is_skipped(tmp_path: Path) -> None:
    data = zip_of({"bot.toml": MANIFEST, "bot.py": "x", "__MACOSX/._bot.py": "junk", "lib/.DS_Store": "junk",
                   "lib/util.py": "y"}, folder="mybot")
    unpack(data, "mybot.zip", tmp_path)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["bot.py", "bot.toml", "lib",
                                                                               "lib/util.py"]
    assert read_manifest(tmp_path).command == ("python", "bot.py")


def test_a_single_source_file_needs_no_manifest(tmp_path: Path) -> None:
    unpack(b"print(1)\n", "my_bot.py", tmp_path)
    assert read_manifest(tmp_path).command == ("python", "my_bot.py")


@pytest.mark.parametrize("name", ["/etc/evil", "../evil", "ok/../../evil", "C:/evil"])
def test_absolute_paths_and_dotdot_are_refused(tmp_path: Path, name: str) -> None:
    assert "not allowed" in _refused(zip_of({name: "x"}), "a.zip", tmp_path)
    (tmp_path / "tar").mkdir()
    tar = tar_with([_member(name, size=1)], {name: b"x"})
    assert "not allowed" in _refused(tar, "a.tar.gz", tmp_path / "tar")


def test_links_and_devices_are_refused(tmp_path: Path) -> None:
    cases = [
        (tar_with([_member("evil", tarfile.SYMTYPE, link="/etc/passwd")]), "links are not allowed"),
        (tar_with([_member("evil", tarfile.LNKTYPE, link="bot.py")]), "links are not allowed"),
        (tar_with([_member("evil", tarfile.CHRTYPE)]), "no devices, pipes or sockets"),
        (tar_with([_member("evil", tarfile.FIFOTYPE)]), "no devices, pipes or sockets"),
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("evil")
        info.external_attr = (0o120777 << 16)
        archive.writestr(info, "/etc/passwd")
    cases.append((buffer.getvalue(), "links are not allowed"))
    for i, (data, said) in enumerate(cases):
        folder = tmp_path / str(i)
        folder.mkdir()
        assert said in _refused(data, "a.tar.gz", folder)


def test_a_zip_bomb_stops_at_the_unpacked_limit(tmp_path: Path) -> None:
    bomb = zip_of({"bot.toml": MANIFEST, "zeros": b"\0" * (30 * 2**20)})
    assert len(bomb) < 100_000
    said = _refused(bomb, "bomb.zip", tmp_path, Bounds(unpacked=10 * 2**20))
    assert "the limit is 10 MB" in said
    assert sum(p.stat().st_size for p in (tmp_path / "dest").rglob("*") if p.is_file()) <= 10 * 2**20


def test_too_many_files_and_too_big_a_packed_upload_are_refused(tmp_path: Path) -> None:
    many = zip_of({f"f{i}.txt": "x" for i in range(30)})
    assert "the limit is 20" in _refused(many, "a.zip", tmp_path, Bounds(files=20))
    (tmp_path / "b").mkdir()
    assert "limit is 1 MB packed" in _refused(b"x" * (2 * 2**20), "a.zip", tmp_path / "b", Bounds(packed=2**20))


def test_what_is_not_an_upload_is_refused_with_what_is(tmp_path: Path) -> None:
    assert "upload a .zip" in _refused(b"MZ\x90\x00", "bot.exe", tmp_path)
    (tmp_path / "b").mkdir()
    payload = bytes(range(256)) * 400
    whole = tar_with([_member("bot.py", size=len(payload))], {"bot.py": payload})
    assert "damaged" in _refused(whole[: len(whole) // 2], "a.tar.gz", tmp_path / "b")


@pytest.mark.parametrize(("manifest", "said"), [
    (None, "no bot.toml"),
    ("command = ", "bot.toml: "),
    ('build = "make"\n', "no command"),
    ('command = []\n', "must be a command line"),
    ('command = "python bot.py"\nrun = "x"\n', "unknown key 'run'"),
])
def test_a_manifest_that_cannot_be_used_says_why(tmp_path: Path, manifest: str | None, said: str) -> None:
    (tmp_path / "bot.py").write_text("x")
    (tmp_path / "other.py").write_text("x")
    if manifest is not None:
        (tmp_path / "bot.toml").write_text(manifest)
    with pytest.raises(UploadError, match=said):
        read_manifest(tmp_path)


def _tar_of(files: dict[str, bytes]) -> bytes:
    return tar_with([_member(name, size=len(data)) for name, data in files.items()], files)


@pytest.mark.parametrize(("upload", "filename", "missing"), [
    (zip_of({"bot.py": "x", "util.py": "x"}, folder="mybot"), "mybot.zip", True),
    (_tar_of({"bot.py": b"x", "notes.txt": b"x"}), "mybot.tar.gz", True),
    (zip_of({"bot.toml": MANIFEST, "bot.py": "x"}, folder="mybot"), "mybot.zip", False),
    (_tar_of({"bot.toml": MANIFEST.encode(), "bot.py": b"x"}), "mybot.tgz", False),
    (zip_of({"bot.py": "x", "__MACOSX/._bot.py": "x"}), "a.zip", False),  # (one source file: its manifest implied)
    (b"print('hi')\n", "bot.py", False),
])
def test_an_archive_without_its_manifest_is_refused_at_upload_with_an_example(
        upload: bytes, filename: str, missing: bool) -> None:
    if not missing:
        check_manifest(upload, filename)
        return
    with pytest.raises(UploadError) as caught:
        check_manifest(upload, filename)
    said = str(caught.value)
    assert said.startswith("no bot.toml") and '    command = ["python", "bot.py"]\n    build = "make"' in said
