"""The network edge: the grpc.aio service that carries games to bots, and the launcher of bot processes."""
