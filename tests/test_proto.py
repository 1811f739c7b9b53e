"""The .proto is the protocol's contract: every part of it says, in a comment, what it means."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

from google.protobuf import descriptor_pb2
from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PROTO = "craits/v1/referee.proto"

# Field numbers of descriptor.proto, the steps of a SourceCodeInfo location's path.
FILE_MESSAGE, FILE_ENUM, FILE_SERVICE = 4, 5, 6
MESSAGE_FIELD, MESSAGE_NESTED, MESSAGE_ENUM, MESSAGE_ONEOF = 2, 3, 4, 8
ENUM_VALUE = 2
SERVICE_METHOD = 2


def parsed() -> descriptor_pb2.FileDescriptorProto:
    """The .proto as protoc parses it, with its comments (source info)."""
    include = str(Path(protoc.__file__).parent / "_proto")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "referee.pb"
        args = ["protoc", f"-I{PROTO_ROOT}", f"-I{include}", "--include_source_info", f"--descriptor_set_out={out}", PROTO]
        assert protoc.main(args) == 0, "protoc could not parse the .proto"
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return files.file[0]


def parts(proto: descriptor_pb2.FileDescriptorProto) -> Iterator[tuple[tuple[int, ...], str]]:
    """(path, what it is) for every rpc, message, oneof, field, enum and enum value."""

    def enum(path: tuple[int, ...], e: descriptor_pb2.EnumDescriptorProto) -> Iterator[tuple[tuple[int, ...], str]]:
        yield path, f"enum {e.name}"
        for i, value in enumerate(e.value):
            yield (*path, ENUM_VALUE, i), f"enum value {e.name}.{value.name}"

    def message(path: tuple[int, ...], m: descriptor_pb2.DescriptorProto) -> Iterator[tuple[tuple[int, ...], str]]:
        yield path, f"message {m.name}"
        for i, oneof in enumerate(m.oneof_decl):
            yield (*path, MESSAGE_ONEOF, i), f"oneof {m.name}.{oneof.name}"
        for i, field in enumerate(m.field):
            yield (*path, MESSAGE_FIELD, i), f"field {m.name}.{field.name}"
        for i, nested in enumerate(m.nested_type):
            yield from message((*path, MESSAGE_NESTED, i), nested)
        for i, e in enumerate(m.enum_type):
            yield from enum((*path, MESSAGE_ENUM, i), e)

    for i, m in enumerate(proto.message_type):
        yield from message((FILE_MESSAGE, i), m)
    for i, e in enumerate(proto.enum_type):
        yield from enum((FILE_ENUM, i), e)
    for i, service in enumerate(proto.service):
        yield (FILE_SERVICE, i), f"service {service.name}"
        for j, method in enumerate(service.method):
            yield (FILE_SERVICE, i, SERVICE_METHOD, j), f"rpc {service.name}.{method.name}"


def test_every_rpc_message_enum_field_and_enum_value_of_the_proto_is_commented() -> None:
    """A bot author reads the .proto: each part of it says what it is, in a `//` line just above
    it or a `//` at the end of its line."""
    proto = parsed()
    comments = {
        tuple(loc.path): (loc.leading_comments + loc.trailing_comments).strip()
        for loc in proto.source_code_info.location
    }
    everything = list(parts(proto))
    assert len(everything) > 200, "the walk over the .proto missed most of it"
    bare = [what for path, what in everything if not comments.get(path)]
    assert not bare, f"{len(bare)} parts of {PROTO} have no comment: {', '.join(bare)}"
