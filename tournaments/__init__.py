"""Tournaments: round robin with seat rotation and duplicate deals, persisted and rated.

``config`` reads a tournament file, ``schedule`` makes the fair schedule,
``runner`` plays it through an injected game runner (``local`` in-process, or the
referee's gRPC runner) into ``server.store``, and ``standings`` rates the results.
``cli`` adds ``craits tournament run|resume|standings|plan``.
"""
