"""The network edge: the grpc.aio service that carries games to bots, the launcher of bot
processes, the pool that keeps them between games, and the referee worker processes."""
