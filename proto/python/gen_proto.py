"""Generate the Python protocol code from proto/ (the one codegen command).

Run from anywhere: ``python proto/python/gen_proto.py`` (``make proto``). Writes
``proto/python/craits/v1/referee_pb2{,_grpc}.py`` and ``.pyi`` type stubs: the
``craits-protocol`` package that both the referee and the bot kit depend on.
Generated files are never edited by hand and never committed.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTO_ROOT = HERE.parent
PROTO_FILES = ["craits/v1/referee.proto"]


def generate() -> None:
    from grpc_tools import protoc  # build-time dependency (grpcio-tools)

    if not (PROTO_ROOT / PROTO_FILES[0]).exists():
        raise SystemExit(f"gen_proto: cannot find {PROTO_ROOT / PROTO_FILES[0]}")
    include = str(Path(protoc.__file__).parent / "_proto")
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={HERE}",
        f"--pyi_out={HERE}",
        f"--grpc_python_out={HERE}",
        *(str(PROTO_ROOT / f) for f in PROTO_FILES),
    ]
    if protoc.main(args) != 0:
        raise SystemExit("gen_proto: protoc failed (see the message above)")


if __name__ == "__main__":
    generate()
    print(f"gen_proto: generated {', '.join(PROTO_FILES)} into {HERE}", file=sys.stderr)
