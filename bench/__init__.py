"""Benchmarks (see bench/README.md)."""

import os

import craits.grpc_io  # first: the benches measure the I/O layer the referee and the kit choose


def grpc_io() -> str:
    """Which gRPC I/O layer this run uses, for the header line (see ``craits.grpc_io``)."""
    value = os.environ.get("GRPC_EXPERIMENTS")
    if value is None:
        return "gRPC I/O: its default (EventEngine from grpcio 1.80)"
    who = "chosen by craits.grpc_io" if craits.grpc_io.chosen else "from the environment"
    return f"gRPC I/O: GRPC_EXPERIMENTS={value!r} ({who})"
