"""The network edge: the grpc.aio service that carries games to bots, the launcher of bot
processes, the pool that keeps them between games, and the referee worker processes."""

import craits.grpc_io  # noqa: F401  # first: it chooses gRPC's I/O layer before grpc is imported
