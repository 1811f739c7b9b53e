"""What does a hostile ``.tar.gz`` cost the web process at upload (issue 36, finding 8)?

Two archives a student can send: 1 MB of gzip holding a tar of 1 GiB (one member of zeros),
and 0.3 MB holding 120,000 folder entries. For each, the upload's check
(``participants.unpack.check_manifest``: a stream within the upload limits) against what it did
before, the baseline in the same run: the whole archive listed by ``tarfile`` (``r:*``,
every entry read and kept). The check must refuse each, naming the limit, or no figure is
printed.

    python bench/tar_uploads.py [--repeat N]

Last line: ``gib_ratio_listing_vs_check=X folders_ratio_listing_vs_check=Y check_ms_gib=A
check_ms_folders=B listing_s_gib=C listing_s_folders=D``.
"""

from __future__ import annotations

import argparse
import gzip
import io
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from participants.unpack import UploadError, check_manifest


def repeated(block: bytes, times: int, *, head: bytes = b"", tail: bytes = b"") -> bytes:
    """gzip members one after another are one stream: ``block`` compressed once, repeated."""
    return gzip.compress(head) + gzip.compress(block) * times + gzip.compress(tail + bytes(1024))


def gigabyte() -> bytes:
    toml, bot = tarfile.TarInfo("bot.toml"), tarfile.TarInfo("bot.py")
    bot.size = 2**30
    return repeated(bytes(2**20), 1024, head=toml.tobuf() + bot.tobuf())


def folders() -> bytes:
    folder = tarfile.TarInfo("d")
    folder.type = tarfile.DIRTYPE
    return repeated(folder.tobuf() * 1000, 120)


def listing(data: bytes) -> int:
    """The baseline: every entry read and kept by tarfile, as the upload's check did before."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
        return len(archive.getmembers())


def check(data: bytes) -> str:
    try:
        check_manifest(data, "bot.tar.gz")
    except UploadError as err:
        return str(err)
    return ""


def best(fn: Callable[[bytes], object], data: bytes, repeat: int) -> tuple[float, object]:
    times, said = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        said = fn(data)
        times.append(time.perf_counter() - started)
    return min(times), said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, the best kept (default 3)")
    args = parser.parse_args()
    figures = {}
    print(f"{'archive':<22} {'packed':>8} {'listing (before)':>17} {'check (now)':>12}  the check said")
    for name, data, limit in (("gib", gigabyte(), "MB unpacked"), ("folders", folders(), "files and folders")):
        listed_s, entries = best(listing, data, args.repeat)
        check_s, said = best(check, data, args.repeat)
        if limit not in str(said):
            print(f"bench: the check did not refuse the {name} archive at its limit (it said {said!r}): no figures")
            return 1
        figures[name] = (listed_s, check_s)
        print(f"{name:<22} {len(data) / 2**20:>6.2f}MB {listed_s:>15.3f} s {check_s * 1000:>9.1f} ms  {said} "
              f"(the listing read {entries} entries)")
    print(f"gib_ratio_listing_vs_check={figures['gib'][0] / figures['gib'][1]:.0f} "
          f"folders_ratio_listing_vs_check={figures['folders'][0] / figures['folders'][1]:.0f} "
          f"check_ms_gib={figures['gib'][1] * 1000:.2f} check_ms_folders={figures['folders'][1] * 1000:.1f} "
          f"listing_s_gib={figures['gib'][0]:.2f} listing_s_folders={figures['folders'][0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
