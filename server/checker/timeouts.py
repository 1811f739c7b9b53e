"""How long the checker waits for a bot unless told (``craits check-bot --timeout``, ``--connect-timeout``,
``--exit-timeout``), in a module that imports nothing: the command line declares those options
without loading the checker's gRPC server."""

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_CONNECT_TIMEOUT_S = 20.0
DEFAULT_EXIT_TIMEOUT_S = 5.0
